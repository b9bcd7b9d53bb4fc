/**
 * PostgreSQL backend over the project's own client (`pg/`): pipelined
 * prepared statements on a few shared connections, transactions on reserved
 * ones. It replaced postgres.js, whose pool under Deno cost more CPU per
 * query than the query itself, grew its idle queue by one slot per query
 * (porsager/postgres#747), and could throw uncaught from a write racing a
 * closed socket.
 */
import {
  classifyDbError,
  type Db,
  type DbPoolMonitor,
  DbTimeoutError,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  type Queryable,
  retryConflicts,
} from "./interface.ts";
import type { Connection, QueryScope } from "./pg/connection.ts";
import { parseConnectionString } from "./pg/options.ts";
import { Pool } from "./pg/pool.ts";
import { requestStore } from "../observe/log.ts";

/** Connections when DB_MAX_POOL_SIZE is 0 ("unlimited"): a cap well under max_connections. */
export const UNLIMITED_POOL_SIZE = 50;

/** The request being served, whose deadline and departure the query follows (observe/request.ts). */
function currentScope(): QueryScope | undefined {
  return requestStore.getStore()?.dbScope as QueryScope | undefined;
}

/** Settings of openPostgres beyond the URL (the URL's own parameters win). */
export interface PostgresOptions {
  /** statement_timeout in ms (0: none); default DEFAULT_STATEMENT_TIMEOUT_MS. */
  statementTimeoutMs?: number;
  /** Unnamed statements only (transaction poolers). */
  unnamedStatements?: boolean;
  /** Hears of credentials sent in clear to another host (pg/connect.ts). */
  warn?: (message: string) => void;
}

/** Opens a pool; `maxPoolSize` 0 means "no limit of ours" (UNLIMITED_POOL_SIZE connections). */
export function openPostgres(
  url: string,
  maxPoolSize: number,
  prefix: string,
  options: PostgresOptions = {},
): Db {
  const connect = parseConnectionString(url);
  if (options.warn) connect.warn = options.warn;
  const timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  if (connect.params.statement_timeout === undefined && timeoutMs > 0) {
    connect.params.statement_timeout = String(Math.round(timeoutMs));
  }
  connect.unnamedStatements ??= options.unnamedStatements ?? false;
  const pool = new Pool(connect, {
    max: maxPoolSize > 0 ? maxPoolSize : UNLIMITED_POOL_SIZE,
  });
  const monitor: DbPoolMonitor = {
    stats: () => pool.stats(),
    onWait: null,
    onTimeout: null,
  };
  pool.onWait = (ms) => monitor.onWait?.(ms / 1000);
  /** The error callers see; timeouts are counted once, where they are first classified. */
  const fail = (e: unknown): unknown => {
    const out = classifyDbError(e);
    if (out instanceof DbTimeoutError && out !== e) monitor.onTimeout?.(out.reason);
    return out;
  };
  const onConnection = (c: Connection): Queryable => ({
    async query<T>(text: string, params: unknown[] = []): Promise<T[]> {
      try {
        return await c.query(text, params, currentScope()) as T[];
      } catch (e) {
        throw fail(e);
      }
    },
    async exec(text: string): Promise<void> {
      try {
        await c.simple(text, currentScope());
      } catch (e) {
        throw fail(e);
      }
    },
  });
  const reserved = async <T>(fn: (c: Connection) => Promise<T>): Promise<T> => {
    let c: Connection;
    try {
      c = await pool.reserve(currentScope());
    } catch (e) {
      throw fail(e);
    }
    try {
      return await fn(c);
    } finally {
      pool.release(c);
    }
  };
  return {
    kind: "postgres",
    prefix,
    t: (name) => `${prefix}${name}`,
    // A statement outside a transaction that PostgreSQL gave up was rolled back: run again.
    query: <T>(text: string, params: unknown[] = []) =>
      retryConflicts(() =>
        pool.query(text, params, currentScope()).catch((e) => {
          throw fail(e);
        }) as Promise<T[]>
      ),
    exec: async (text) => {
      try {
        await pool.exec(text, currentScope());
      } catch (e) {
        throw fail(e);
      }
    },
    // A deadlock or serialization failure rolled the work back: `fn` runs again (it must do
    // nothing but SQL on `tx`, which every caller's does).
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      retryConflicts(() =>
        reserved(async (c) => {
          try {
            await c.simple("BEGIN");
            const result = await fn(onConnection(c));
            await c.simple("COMMIT");
            return result;
          } catch (e) {
            // A retired connection (its statement is being cancelled) is closed on release, which
            // ends the transaction: the caller does not wait for the cancel to land.
            if (!c.closed && !c.retired && c.txStatus !== "I") {
              await c.simple("ROLLBACK").catch(() => {});
            }
            throw fail(e);
          }
        })
      ),
    withConnection: <T>(fn: (conn: Queryable) => Promise<T>) =>
      reserved((c) => fn(onConnection(c))),
    async ping() {
      try {
        await pool.query("select 1");
        return true;
      } catch {
        return false;
      }
    },
    close: () => pool.end(5000),
    monitor,
  };
}

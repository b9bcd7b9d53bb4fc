/**
 * PostgreSQL backend over the project's own client (`pg/`): pipelined
 * prepared statements on a few shared connections, transactions on reserved
 * ones. It replaced postgres.js, whose pool under Deno cost more CPU per
 * query than the query itself, grew its idle queue by one slot per query
 * (porsager/postgres#747), and could throw uncaught from a write racing a
 * closed socket (bench/README.md).
 */
import { classifyDbError, type Db, type Queryable } from "./db.ts";
import type { Connection } from "./pg/connection.ts";
import { parseConnectionString } from "./pg/options.ts";
import { Pool } from "./pg/pool.ts";

/** Connections when DB_MAX_POOL_SIZE is 0 ("unlimited"): a cap well under max_connections. */
export const UNLIMITED_POOL_SIZE = 50;

function onConnection(c: Connection): Queryable {
  return {
    async query<T>(text: string, params: unknown[] = []): Promise<T[]> {
      try {
        return await c.query(text, params) as T[];
      } catch (e) {
        throw classifyDbError(e);
      }
    },
    async exec(text: string): Promise<void> {
      try {
        await c.simple(text);
      } catch (e) {
        throw classifyDbError(e);
      }
    },
  };
}

/**
 * Opens a pool; `maxPoolSize` 0 means "no limit of ours" (UNLIMITED_POOL_SIZE connections).
 * `warn` hears of credentials sent in clear to another host (pg/connection.ts).
 */
export function openPostgres(
  url: string,
  maxPoolSize: number,
  prefix: string,
  options: { warn?: (message: string) => void } = {},
): Db {
  const connect = parseConnectionString(url);
  if (options.warn) connect.warn = options.warn;
  const pool = new Pool(connect, {
    max: maxPoolSize > 0 ? maxPoolSize : UNLIMITED_POOL_SIZE,
  });
  const reserved = async <T>(fn: (c: Connection) => Promise<T>): Promise<T> => {
    let c: Connection;
    try {
      c = await pool.reserve();
    } catch (e) {
      throw classifyDbError(e);
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
    query: <T>(text: string, params: unknown[] = []) =>
      pool.query(text, params).catch((e) => {
        throw classifyDbError(e);
      }) as Promise<T[]>,
    exec: async (text) => {
      try {
        await pool.exec(text);
      } catch (e) {
        throw classifyDbError(e);
      }
    },
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      reserved(async (c) => {
        try {
          await c.simple("BEGIN");
          const result = await fn(onConnection(c));
          await c.simple("COMMIT");
          return result;
        } catch (e) {
          if (!c.closed && c.txStatus !== "I") await c.simple("ROLLBACK").catch(() => {});
          throw classifyDbError(e);
        }
      }),
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
  };
}

/** PostgreSQL backend over postgres.js. */
import { postgres } from "../../deps.ts";
import { classifyDbError, type Db, type Queryable } from "./db.ts";
import { Semaphore } from "./semaphore.ts";

type Sql = ReturnType<typeof postgres>;
// deno-lint-ignore no-explicit-any
type AnySql = any;

function queryable(sql: AnySql): Queryable {
  return {
    async query<T>(text: string, params: unknown[] = []): Promise<T[]> {
      try {
        // Named prepared statements: `unsafe` defaults to unnamed ones, which cost every
        // parameterised query two round trips (Parse+Describe, wait, then Bind+Execute) and a
        // fresh parse and plan in PostgreSQL; prepared once per connection, it is one round
        // trip (bench/README.md, "GET /user").
        return [...await sql.unsafe(text, params as never[], { prepare: true })] as T[];
      } catch (e) {
        throw classifyDbError(e);
      }
    },
    async exec(text: string): Promise<void> {
      try {
        await sql.unsafe(text);
      } catch (e) {
        throw classifyDbError(e);
      }
    },
  };
}

function jsonParam(x: unknown): string {
  return typeof x === "string" ? x : JSON.stringify(x);
}

/**
 * postgres.js 3.4.9 under Deno: a write it scheduled with setImmediate can still run after its
 * socket closed (the clearImmediate in its close handler does not stop it), and throws
 * "Cannot read properties of null (reading 'write')" from `nextWrite`, uncaught, which ended the
 * whole server process when PostgreSQL dropped connections under load (tests/reliability/
 * faults_test.ts, about one run in five). This guard keeps the process alive and replaces every
 * open pool, since the connection that threw is left with a half-written buffer.
 */
const replaceOnWriteBug = new Set<() => void>();
let guardInstalled = false;

function installWriteBugGuard(): void {
  if (guardInstalled) return;
  guardInstalled = true;
  globalThis.addEventListener("error", (ev) => {
    const e = ev.error;
    const stack = e instanceof Error ? e.stack ?? "" : "";
    if (
      e instanceof TypeError && /reading 'write'/.test(e.message) && /nextWrite/.test(stack) &&
      /postgres/.test(stack)
    ) {
      ev.preventDefault();
      for (const replace of [...replaceOnWriteBug]) replace();
    }
  });
}

/** Opens a pool; `maxPoolSize` 0 means "no limit of ours" (50 connections). */
export function openPostgres(url: string, maxPoolSize: number, prefix: string): Db {
  const max = maxPoolSize > 0 ? maxPoolSize : 50;
  const open = (): Sql =>
    postgres(url, {
      max,
      onnotice: () => {},
      connect_timeout: 5,
      // postgres.js's default backoff grows with every failed connect of the whole pool
      // (0.5-1 x 3^n / 100 s, up to 20 s): after a short outage, queries waited up to 20 s
      // for a delayed reconnect although PostgreSQL was back (tests/reliability/faults_test.ts).
      // Capped at 1 s, requests during an outage get their 503 fast and recover within 1 s.
      backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2),
      idle_timeout: 60,
      prepare: true,
      types: {
        // int8 as number, so both backends return the same type for bigint columns
        bigint: {
          to: 20,
          from: [20],
          serialize: (x: number) => String(x),
          parse: (x: string) => Number(x),
        },
        // json/jsonb parameters: text is already JSON (as PGlite takes it), so
        // JSON.stringify(obj) is stored as the object, not as a JSON string
        json: { to: 114, from: [114], serialize: jsonParam, parse: (x: string) => JSON.parse(x) },
        jsonb: {
          to: 3802,
          from: [3802],
          serialize: jsonParam,
          parse: (x: string) => JSON.parse(x),
        },
      },
    });
  let sql = open();
  let base = queryable(sql);
  const replace = () => {
    const old = sql;
    sql = open();
    base = queryable(sql);
    old.end({ timeout: 1 }).catch(() => {});
  };
  installWriteBugGuard();
  replaceOnWriteBug.add(replace);
  const gate = new Semaphore(max);
  return {
    kind: "postgres",
    prefix,
    t: (name) => `${prefix}${name}`,
    query: (text, params) => gate.run(() => base.query(text, params)),
    exec: (text) => gate.run(() => base.exec(text)),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      gate.run(async () => {
        try {
          return await sql.begin((tx: AnySql) => fn(queryable(tx))) as T;
        } catch (e) {
          throw classifyDbError(e);
        }
      }),
    withConnection: <T>(fn: (conn: Queryable) => Promise<T>) =>
      gate.run(async () => {
        let conn: AnySql;
        try {
          conn = await sql.reserve();
        } catch (e) {
          throw classifyDbError(e);
        }
        try {
          return await fn(queryable(conn));
        } finally {
          conn.release();
        }
      }),
    async ping() {
      try {
        await base.query("select 1");
        return true;
      } catch {
        return false;
      }
    },
    close: () => {
      replaceOnWriteBug.delete(replace);
      return sql.end({ timeout: 5 });
    },
  };
}

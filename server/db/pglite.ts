/**
 * Embedded PostgreSQL (PGlite, real PostgreSQL compiled to WASM): the
 * zero-setup default. One connection; PGlite serialises queries itself.
 */
import { PGlite } from "@electric-sql/pglite";
import type { Db, Queryable } from "./db.ts";
import { claimDataDir, DataDirError } from "./data_dir.ts";

// deno-lint-ignore no-explicit-any
type AnyPg = any;

function queryable(pg: AnyPg): Queryable {
  return {
    async query<T>(text: string, params: unknown[] = []): Promise<T[]> {
      const res = await pg.query(text, params);
      return res.rows as T[];
    },
    async exec(text: string): Promise<void> {
      await pg.exec(text);
    },
  };
}

/**
 * Opens PGlite under `dataDir` ("memory://" for an in-memory database), claimed for this
 * process (data_dir.ts). Throws DataDirError when the directory cannot be used.
 */
export async function openPglite(dataDir: string, prefix: string): Promise<Db> {
  const inMemory = dataDir === "" || dataDir.startsWith("memory://");
  const claim = inMemory ? undefined : await claimDataDir(dataDir);
  let pg: AnyPg;
  try {
    pg = new PGlite(inMemory ? undefined : dataDir, {
      parsers: { 20: (x: string) => Number(x) },
    });
    await pg.waitReady;
    await claim?.opened();
  } catch (e) {
    await claim?.release();
    if (inMemory) throw e;
    // PGlite stops with a bare ExitStatus ("exit(1)"), not an Error, on a directory it cannot use.
    const why = e instanceof Error ? e.message : String((e as { message?: unknown })?.message ?? e);
    throw new DataDirError(
      `the embedded database in AUTHSVC_DB_DATA_DIR ${dataDir} did not open (${why}): restore the directory from a backup, or point AUTHSVC_DB_DATA_DIR at a new one`,
    );
  }
  const base = queryable(pg);
  let closed = false;
  return {
    kind: "pglite",
    prefix,
    t: (name) => `${prefix}${name}`,
    query: base.query,
    exec: base.exec,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      pg.transaction((tx: AnyPg) => fn(queryable(tx))) as Promise<T>,
    withConnection: <T>(fn: (conn: Queryable) => Promise<T>) => fn(base),
    async ping() {
      if (closed) return false;
      try {
        await pg.query("select 1");
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await pg.close();
      } finally {
        await claim?.release();
      }
    },
  };
}

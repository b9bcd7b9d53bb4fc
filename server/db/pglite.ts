/**
 * Embedded PostgreSQL (PGlite, real PostgreSQL compiled to WASM): the
 * zero-setup default. One connection; PGlite serialises queries itself.
 */
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import type { Db, Queryable } from "./interface.ts";
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
 * The PostgreSQL major version of the PGlite release deno.json pins. A data
 * directory written by another major cannot be opened (PostgreSQL's own rule:
 * its PG_VERSION file names the major that wrote it); scripts/pglite_upgrade.ts
 * copies one over. tests/server/db/pglite_upgrade_test.ts keeps this in step.
 */
export const PGLITE_PG_MAJOR = "18";

/**
 * Refuses a data directory written by another PostgreSQL major with a message
 * saying what to run, instead of PGlite's "failed to initialize properly".
 */
async function checkDataDirVersion(dataDir: string): Promise<void> {
  let found: string;
  try {
    found = (await Deno.readTextFile(`${dataDir}/PG_VERSION`)).trim();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return; // a new database
    throw e;
  }
  if (found === PGLITE_PG_MAJOR) return;
  throw new DataDirError(
    `AUTHSVC_DB_DATA_DIR ${dataDir} holds a PostgreSQL ${found} database (written by an ` +
      `earlier version of this server); the embedded PostgreSQL is now ${PGLITE_PG_MAJOR}: ` +
      `copy it over with "deno task pglite:upgrade ${dataDir}" (the old directory is kept), ` +
      `or point DATABASE_URL at a PostgreSQL server`,
  );
}

/**
 * Opens PGlite under `dataDir` ("memory://" for an in-memory database), claimed for this
 * process (data_dir.ts). Throws DataDirError when the directory cannot be used.
 */
export async function openPglite(dataDir: string, prefix: string): Promise<Db> {
  const inMemory = dataDir === "" || dataDir.startsWith("memory://");
  const claim = inMemory ? undefined : await claimDataDir(dataDir);
  try {
    if (!inMemory) await checkDataDirVersion(dataDir);
  } catch (e) {
    await claim?.release();
    throw e;
  }
  let pg: AnyPg;
  try {
    // "memory://" rather than undefined: PGlite reads its options from the first argument when
    // that is not a string. pg_trgm: the indexes of the admin user search (migration 0023).
    pg = new PGlite(inMemory ? "memory://" : dataDir, {
      parsers: { 20: (x: string) => Number(x) },
      extensions: { pg_trgm },
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

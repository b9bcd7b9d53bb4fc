/**
 * Copies an embedded database (AUTHSVC_DB_DATA_DIR) written by PostgreSQL 17,
 * the PGlite 0.3 of earlier versions of this server, into one the PGlite of
 * deno.json (PostgreSQL 18) opens. PostgreSQL cannot open another major's data files,
 * so the server refuses such a directory and names this command
 * (server/db/pglite.ts); docs/server/database.md has the walk-through.
 *
 *   deno task pglite:upgrade [DATA_DIR]   # default: $AUTHSVC_DB_DATA_DIR or ./.authsvc/data
 *
 * The old PGlite dumps every table with pg_dump (plain SQL with INSERTs), the
 * current one restores it into DATA_DIR.upgrading, the row counts of every
 * table are compared, the installation's own files beside the database
 * (jwt_secret) are copied, and only then the directories swap: the old one is
 * kept as DATA_DIR.pg17 until the operator deletes it. The directory is claimed
 * as the server claims it, so this refuses to run while a server holds it.
 */
import { PGlite as PGlite17 } from "pglite-pg17";
import { pgDump } from "pglite-tools-pg17/pg_dump";
import { PGlite } from "@electric-sql/pglite";
import { PGLITE_PG_MAJOR } from "../server/db/pglite.ts";
import { claimDataDir, HOLDER_FILE } from "../server/db/data_dir.ts";

/** The PGlite of earlier versions (tests/server/db/pglite_upgrade_test.ts makes a directory with it). */
export { PGlite17 };

/** The major this script reads; the one it writes is PGLITE_PG_MAJOR. */
const FROM_MAJOR = "17";

/** What an upgrade did. */
export interface UpgradeResult {
  /** False when the directory was already PGLITE_PG_MAJOR's. */
  upgraded: boolean;
  /** Where the old directory is kept. */
  kept?: string;
  /** Rows per table, the same before and after. */
  rows: Record<string, number>;
}

interface Sql {
  query<T>(text: string): Promise<{ rows: T[] }>;
}

async function rowCounts(pg: Sql): Promise<Record<string, number>> {
  const tables = await pg.query<{ name: string }>(
    `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) AS name FROM pg_tables
      WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
  );
  const counts: Record<string, number> = {};
  for (const { name } of tables.rows) {
    counts[name] = (await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${name}`))
      .rows[0].n;
  }
  return counts;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Upgrades `dir` in place (the old copy kept beside it); throws with what to do on refusal. */
export async function upgradeDataDir(
  dir: string,
  log: (line: string) => void = () => {},
): Promise<UpgradeResult> {
  dir = dir.replace(/\/+$/, "");
  let major: string;
  try {
    major = (await Deno.readTextFile(`${dir}/PG_VERSION`)).trim();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new Error(`"${dir}" is not an embedded database: it has no PG_VERSION file`);
  }
  if (major === PGLITE_PG_MAJOR) return { upgraded: false, rows: {} };
  if (major !== FROM_MAJOR) {
    throw new Error(
      `"${dir}" holds a PostgreSQL ${major} database; this command copies ${FROM_MAJOR} to ` +
        `${PGLITE_PG_MAJOR} only`,
    );
  }
  const kept = `${dir}.pg${FROM_MAJOR}`;
  const next = `${dir}.upgrading`;
  if (await exists(kept)) {
    throw new Error(`"${kept}" exists: move it away (an earlier upgrade keeps the old copy there)`);
  }
  await Deno.remove(next, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }); // left by an interrupted run

  // The server's own claim (server/db/data_dir.ts): refused while a server holds the directory.
  const claim = await claimDataDir(dir);
  try {
    return await copyOver(dir, next, kept, log);
  } finally {
    await claim.release();
  }
}

async function copyOver(
  dir: string,
  next: string,
  kept: string,
  log: (line: string) => void,
): Promise<UpgradeResult> {
  log(`reading "${dir}" with PostgreSQL ${FROM_MAJOR} (PGlite 0.3)`);
  const old = new PGlite17(dir);
  let dump: string;
  let before: Record<string, number>;
  try {
    await old.waitReady;
    before = await rowCounts(old);
    // pglite-tools 0.2 is PGlite 0.3's pg_dump; its types name the PGlite of the import map.
    const pg = old as unknown as Parameters<typeof pgDump>[0]["pg"];
    dump = await (await pgDump({ pg, args: ["--no-owner", "--no-privileges"] })).text();
  } finally {
    await old.close();
  }

  log(`writing "${next}" with PostgreSQL ${PGLITE_PG_MAJOR}`);
  const fresh = new PGlite(next);
  try {
    await fresh.waitReady;
    await fresh.exec(dump);
    const after = await rowCounts(fresh);
    const differ = Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t]);
    if (differ.length) {
      throw new Error(
        `the copy differs from "${dir}" in ${differ.join(", ")}; nothing was changed`,
      );
    }
  } finally {
    await fresh.close();
  }

  // Files of the installation's own beside the database files (jwt_secret.ts keeps its secret
  // there); PostgreSQL's per-process files stay behind.
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || entry.name.startsWith("postmaster.") || entry.name === HOLDER_FILE) {
      continue;
    }
    if (await exists(`${next}/${entry.name}`)) continue;
    await Deno.copyFile(`${dir}/${entry.name}`, `${next}/${entry.name}`);
    log(`copied ${entry.name}`);
  }
  await Deno.rename(dir, kept);
  await Deno.rename(next, dir);
  return { upgraded: true, kept, rows: before };
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? Deno.env.get("AUTHSVC_DB_DATA_DIR") ?? "./.authsvc/data";
  try {
    const result = await upgradeDataDir(dir, (line) => console.log(line));
    if (!result.upgraded) {
      console.log(`"${dir}" is already a PostgreSQL ${PGLITE_PG_MAJOR} database: nothing to do`);
    } else {
      const rows = Object.values(result.rows).reduce((a, b) => a + b, 0);
      console.log(
        `upgraded "${dir}" to PostgreSQL ${PGLITE_PG_MAJOR}: ${
          Object.keys(result.rows).length
        } tables, ${rows} rows; the old copy is in "${result.kept}" (delete it once the server ` +
          `runs)`,
      );
    }
  } catch (e) {
    console.error(`pglite:upgrade: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
}

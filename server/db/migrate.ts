/**
 * Applies pending migrations, each once and in its own transaction, under a
 * transaction-level advisory lock so that several processes starting together
 * wait for one another instead of racing. Nothing outlives a transaction (no
 * session lock, no session setting), so this works through a transaction
 * pooler such as PgBouncer too.
 */
import { MIGRATIONS, readMigration } from "../../migrations/mod.ts";
import type { Db } from "./db.ts";

/**
 * Migrations of this process, chained per lock key. PGlite has one session,
 * in which advisory locks are re-entrant, so two handles on one embedded
 * database would not exclude each other through the lock alone.
 */
const running = new Map<string, Promise<unknown>>();

/** Applies what is pending; returns the names applied now. */
export function migrate(db: Db, log: (msg: string) => void = () => {}): Promise<string[]> {
  const lockKey = `authsvc_migrations:${db.prefix}`;
  const prev = running.get(lockKey) ?? Promise.resolve();
  const next = prev.catch(() => {}).then(() => migrateLocked(db, lockKey, log));
  running.set(lockKey, next);
  next.finally(() => {
    if (running.get(lockKey) === next) running.delete(lockKey);
  }).catch(() => {});
  return next;
}

async function migrateLocked(
  db: Db,
  lockKey: string,
  log: (msg: string) => void,
): Promise<string[]> {
  const table = db.t("schema_migrations");
  const applied: string[] = [];
  while (true) {
    const name = await db.transaction(async (tx) => {
      // Migrations may take longer than the statement timeout of ordinary work.
      await tx.exec("SET LOCAL statement_timeout = 0");
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey]);
      await tx.exec(
        `CREATE TABLE IF NOT EXISTS ${table} (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const done = new Set(
        (await tx.query<{ version: string }>(`SELECT version FROM ${table}`)).map((r) => r.version),
      );
      const next = MIGRATIONS.find((m) => !done.has(m));
      if (next === undefined) return null;
      const sql = (await readMigration(next)).replaceAll("__NS__", db.prefix);
      try {
        await tx.exec(`${sql}\n;INSERT INTO ${table} (version) VALUES ('${next}');`);
      } catch (e) {
        throw new Error(`migration ${next} failed: ${e instanceof Error ? e.message : e}`, {
          cause: e,
        });
      }
      return next;
    });
    if (name === null) return applied;
    log(`applied migration ${name}`);
    applied.push(name);
  }
}

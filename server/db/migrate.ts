/**
 * Applies pending migrations, each once and in its own transaction, under a
 * session-level advisory lock so that several processes starting together
 * wait for one another instead of racing.
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
  return await db.withConnection(async (conn) => {
    await conn.query("SELECT pg_advisory_lock(hashtext($1))", [lockKey]);
    try {
      await conn.exec(
        `CREATE TABLE IF NOT EXISTS ${table} (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const done = new Set(
        (await conn.query<{ version: string }>(`SELECT version FROM ${table}`)).map((r) =>
          r.version
        ),
      );
      const applied: string[] = [];
      for (const name of MIGRATIONS) {
        if (done.has(name)) continue;
        const sql = (await readMigration(name)).replaceAll("__NS__", db.prefix);
        await conn.exec(
          `BEGIN;\n${sql}\n;INSERT INTO ${table} (version) VALUES ('${name}');\nCOMMIT;`,
        )
          .catch(async (e) => {
            await conn.exec("ROLLBACK").catch(() => {});
            throw new Error(`migration ${name} failed: ${e instanceof Error ? e.message : e}`, {
              cause: e,
            });
          });
        log(`applied migration ${name}`);
        applied.push(name);
      }
      return applied;
    } finally {
      await conn.query("SELECT pg_advisory_unlock(hashtext($1))", [lockKey]).catch(() => {});
    }
  });
}

/**
 * DB_NAMESPACE reaches every object the migrations make (tables, indexes,
 * constraints' indexes, sequences), and migrations stay safe when several
 * server PROCESSES start together on one PostgreSQL (the advisory lock).
 */
import assert from "node:assert/strict";
import { openDb } from "../../../server/db/db.ts";
import { migrate } from "../../../server/db/migrate.ts";
import { MIGRATIONS, readMigration } from "../../../migrations/mod.ts";
import { runServerCommand } from "../../helpers/process.ts";
import { dropNamespace, freshNamespace, testDatabaseUrl } from "../../helpers/server.ts";

Deno.test("every table, index, sequence, function and trigger of the migrations carries the DB_NAMESPACE prefix", async () => {
  // A database of its own, so every relation in it comes from these migrations.
  const db = await openDb({ url: "", dataDir: "memory://", maxPoolSize: 0, prefix: "acme_" });
  try {
    await migrate(db);
    const rows = await db.query<{ relname: string; relkind: string }>(
      `SELECT c.relname, c.relkind::text AS relkind FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'S', 'v', 'm')`,
    );
    const kinds = new Set(rows.map((r) => r.relkind));
    assert.ok(kinds.has("r") && kinds.has("i") && kinds.has("S"), [...kinds].join());
    const unprefixed = rows.filter((r) => !r.relname.startsWith("acme_")).map((r) => r.relname);
    assert.deepEqual(unprefixed, []);
    for (
      const table of ["users", "identities", "sessions", "refresh_tokens", "audit_log_entries"]
    ) {
      assert.ok(rows.some((r) => r.relname === `acme_${table}`), table);
    }
    // functions and triggers too (the profile revision's, migrations/0009_profile_rev.sql); not
    // an extension's own (pg_trgm's, migrations/0023_user_search.sql), which are the database's
    const fns = await db.query<{ name: string }>(
      `SELECT p.proname::text AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = current_schema() AND NOT EXISTS (
         SELECT 1 FROM pg_depend d
         WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
       UNION ALL SELECT tgname::text FROM pg_trigger WHERE NOT tgisinternal`,
    );
    assert.ok(fns.length >= 5, JSON.stringify(fns));
    assert.deepEqual(fns.filter((f) => !f.name.startsWith("acme_")), []);
    // and the SQL names every object it creates through __NS__
    for (const name of MIGRATIONS) {
      const sql = await readMigration(name);
      for (
        const m of sql.matchAll(
          /CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|SEQUENCE|FUNCTION|TRIGGER)\s+(?:IF NOT EXISTS\s+)?(\S+)/gi,
        )
      ) {
        assert.ok(m[1].startsWith("__NS__"), `${name}: ${m[0]}`);
      }
    }
  } finally {
    await db.close();
  }
});

Deno.test({
  name: "two migrate processes started together on one PostgreSQL apply each migration once",
  ignore: !testDatabaseUrl(),
  fn: async () => {
    const ns = freshNamespace();
    const env = { DATABASE_URL: testDatabaseUrl(), AUTHSVC_DB_NAMESPACE: ns };
    try {
      const runs = await Promise.all([
        runServerCommand(["migrate"], env),
        runServerCommand(["migrate"], env),
      ]);
      for (const r of runs) assert.equal(r.code, 0, r.stderr);
      for (const name of MIGRATIONS) {
        const appliedBy = runs.filter((r) => r.stdout.includes(`applied migration ${name}`));
        assert.equal(appliedBy.length, 1, `${name} applied by ${appliedBy.length} processes`);
      }
    } finally {
      const db = await openDb({ url: testDatabaseUrl(), dataDir: "", maxPoolSize: 1, prefix: "" });
      const [{ n }] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${ns}_schema_migrations`,
      ).catch(() => [{ n: -1 }]);
      await dropNamespace(db, `${ns}_`);
      await db.close();
      assert.equal(n, MIGRATIONS.length);
    }
  },
});

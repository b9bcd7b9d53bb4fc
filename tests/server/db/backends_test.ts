/**
 * The same small database suite on BOTH backends in one run: embedded PGlite
 * always, PostgreSQL when DATABASE_URL is set.
 */
import assert from "node:assert/strict";
import { type Db, isUniqueViolation, openDb } from "../../../server/db/db.ts";
import { migrate } from "../../../server/db/migrate.ts";
import { MIGRATIONS } from "../../../migrations/mod.ts";
import { dropNamespace, freshNamespace } from "../../helpers/server.ts";

const PG_URL = Deno.env.get("DATABASE_URL") ?? "";

/** Two handles on one database with one fresh namespace, and a cleanup. */
async function handles(backend: "pglite" | "postgres") {
  const prefix = `${freshNamespace()}_`;
  if (backend === "postgres") {
    const a = await openDb({ url: PG_URL, dataDir: "", maxPoolSize: 4, prefix });
    const b = await openDb({ url: PG_URL, dataDir: "", maxPoolSize: 4, prefix });
    return {
      a,
      b,
      close: async () => {
        await dropNamespace(a, prefix).catch(() => {});
        await a.close();
        await b.close();
      },
    };
  }
  // two handles on one embedded database, as two servers in one process share it
  pglite ??= openDb({ url: "", dataDir: "memory://", maxPoolSize: 0, prefix: "" });
  const base = await pglite;
  const a: Db = { ...base, prefix, t: (n: string) => `${prefix}${n}` };
  const b: Db = { ...base, prefix, t: (n: string) => `${prefix}${n}` };
  return { a, b, close: () => dropNamespace(base, prefix) };
}

/** One embedded database for this file (opening one takes a while); namespaces keep tests apart. */
let pglite: Promise<Db> | undefined;

for (const backend of ["pglite", "postgres"] as const) {
  Deno.test({
    name: `${backend}: migrations are idempotent and safe when two handles migrate at once`,
    ignore: backend === "postgres" && !PG_URL,
    fn: async () => {
      const { a, b, close } = await handles(backend);
      try {
        const [ra, rb] = await Promise.all([migrate(a), migrate(b)]);
        // every migration applied exactly once, by one of the two
        assert.deepEqual([...ra, ...rb].sort(), [...MIGRATIONS].sort());
        assert.deepEqual(await migrate(a), []);
        assert.deepEqual(await migrate(b), []);
        const rows = await a.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${a.t("schema_migrations")}`,
        );
        assert.equal(rows[0].n, MIGRATIONS.length);
      } finally {
        await close();
      }
    },
  });

  Deno.test({
    name: `${backend}: unique violations, rolled-back transactions, value types`,
    ignore: backend === "postgres" && !PG_URL,
    fn: async () => {
      const { a, close } = await handles(backend);
      try {
        await migrate(a);
        const users = a.t("users");
        const [u] = await a.query<{ id: string; raw_user_meta_data: unknown; created_at: unknown }>(
          `INSERT INTO ${users} (email, raw_user_meta_data) VALUES ($1, $2) RETURNING *`,
          ["one@example.com", JSON.stringify({ name: "One", tags: [1, 2] })],
        );
        assert.deepEqual(u.raw_user_meta_data, { name: "One", tags: [1, 2] });
        assert.ok(u.created_at instanceof Date);
        await assert.rejects(
          a.query(`INSERT INTO ${users} (email) VALUES ($1)`, ["one@example.com"]),
          (e) => isUniqueViolation(e),
        );
        await assert.rejects(
          a.transaction(async (tx) => {
            await tx.query(`INSERT INTO ${users} (email) VALUES ($1)`, ["two@example.com"]);
            throw new Error("changed my mind");
          }),
          /changed my mind/,
        );
        await assert.rejects(
          a.transaction(async (tx) => {
            await tx.query(`INSERT INTO ${users} (email) VALUES ($1)`, ["three@example.com"]);
            await tx.query(`INSERT INTO ${users} (email) VALUES ($1)`, ["one@example.com"]);
          }),
          (e) => isUniqueViolation(e),
        );
        const [{ n }] = await a.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${users}`);
        assert.equal(n, 1);
        const committed = await a.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${users} (email) VALUES ($1)`, ["four@example.com"]);
          return "done";
        });
        assert.equal(committed, "done");
        const [{ m }] = await a.query<{ m: number }>(`SELECT count(*)::int AS m FROM ${users}`);
        assert.equal(m, 2);
        assert.equal(await a.ping(), true);
      } finally {
        await close();
      }
    },
  });
}

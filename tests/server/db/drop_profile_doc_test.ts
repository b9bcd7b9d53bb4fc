/**
 * migrations/0021_drop_profile_doc.sql on a database that has the stored copy of the users'
 * JSON (migrations up to 0019, users written with it): the column, its trigger and its
 * functions are gone, the rows stay, and the profile revision still moves on every change of
 * a user, an identity or a factor, once per transaction (migrations/0009_profile_rev.sql).
 */
import assert from "node:assert/strict";
import { openDb } from "../../../server/db/db.ts";
import { MIGRATIONS, readMigration } from "../../../migrations/mod.ts";

Deno.test("0021 drops the stored user JSON and keeps the profile revision", async () => {
  const db = await openDb({ url: "", dataDir: "memory://", maxPoolSize: 0, prefix: "up_" });
  try {
    const run = async (names: readonly string[]) => {
      for (const n of names) await db.exec((await readMigration(n)).replaceAll("__NS__", "up_"));
    };
    const at = MIGRATIONS.indexOf("0021_drop_profile_doc.sql");
    assert.ok(at > 0);
    await run(MIGRATIONS.slice(0, at));
    const [u] = await db.query<{ id: string; doc: string | null }>(
      `INSERT INTO up_users (email, raw_user_meta_data) VALUES ('a@example.com', '{"n":1}')
       RETURNING id, profile_doc AS doc`,
    );
    assert.ok(u.doc?.includes('"user_metadata":{"n":1}'), "the copy exists before");

    await run(MIGRATIONS.slice(at));
    const cols = await db.query<{ name: string }>(
      `SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'up_users'`,
    );
    assert.ok(cols.some((c) => c.name === "profile_rev"));
    assert.ok(!cols.some((c) => c.name === "profile_doc"), "the column is gone");
    const fns = await db.query<{ name: string }>(
      `SELECT proname::text AS name FROM pg_proc WHERE proname LIKE 'up\\_%'
       UNION ALL SELECT tgname::text FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'up\\_%'
       ORDER BY 1`,
    );
    assert.deepEqual(fns.map((f) => f.name), [
      "up_identities_profile_rev",
      "up_mfa_factors_profile_rev",
      "up_session_id_v7",
      "up_users_profile_rev",
      "up_users_profile_rev_of_child",
      "up_users_profile_rev_on_update",
    ]);

    const rev = async () =>
      (await db.query<{ r: number }>(`SELECT profile_rev AS r FROM up_users WHERE id = $1`, [
        u.id,
      ]))[0].r;
    const r0 = await rev();
    await db.query(`UPDATE up_users SET raw_user_meta_data = '{"n":2}' WHERE id = $1`, [u.id]);
    const r1 = await rev();
    assert.ok(r1 > r0, "a user update takes a new revision");
    await db.query(
      `INSERT INTO up_identities (user_id, provider, provider_id, identity_data)
       VALUES ($1, 'github', 'gh-1', '{}')`,
      [u.id],
    );
    const r2 = await rev();
    assert.ok(r2 > r1, "an identity takes one");
    await db.query(
      `INSERT INTO up_mfa_factors (user_id, factor_type, status) VALUES ($1, 'totp', 'unverified')`,
      [u.id],
    );
    const r3 = await rev();
    assert.ok(r3 > r2, "a factor takes one");
    await db.transaction(async (tx) => {
      await tx.query(`UPDATE up_users SET email = 'b@example.com' WHERE id = $1`, [u.id]);
      await tx.query(`DELETE FROM up_identities WHERE user_id = $1`, [u.id]);
    });
    const r4 = await rev();
    assert.ok(r4 > r3, "a transaction that writes both takes one");
    const [seq] = await db.query<{ v: number }>(
      `SELECT last_value AS v FROM up_users_profile_rev_seq`,
    );
    assert.equal(Number(seq.v), r4, "and only one");
  } finally {
    await db.close();
  }
});

/**
 * Deadlocks (40P01) and serialization failures (40001) (issue 25): PostgreSQL
 * rolls the losing transaction back, so the server runs it again (at most
 * CONFLICT_RETRIES times); one that keeps failing answers 409 `conflict` with
 * Retry-After, never 500. PostgreSQL only (PGlite runs one statement at a
 * time: nothing to deadlock).
 */
import assert from "node:assert/strict";
import { CONFLICT_RETRIES, DbConflictError, openDb } from "../../../server/db/db.ts";
import { call } from "../../helpers/http.ts";
import {
  dropNamespace,
  freshNamespace,
  postJson,
  startTestServer,
  testDatabaseUrl,
} from "../../helpers/server.ts";

const url = testDatabaseUrl();
const ignore = !url.startsWith("postgres");

/** A promise and its resolver. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}

Deno.test({
  name: "a real deadlock: PostgreSQL aborts one transaction, which runs again and commits",
  ignore,
  async fn() {
    const prefix = `${freshNamespace()}_`;
    const db = await openDb({ url, dataDir: "", maxPoolSize: 4, prefix });
    const t = db.t("deadlock");
    try {
      await db.exec(`CREATE TABLE ${t} (id int PRIMARY KEY, n int NOT NULL);
        INSERT INTO ${t} VALUES (1, 0), (2, 0);`);
      const aHolds = signal(), bHolds = signal();
      const runs = { a: 0, b: 0 };
      // A locks row 1 then wants row 2; B locks row 2 then wants row 1: the classic cycle.
      // Only the first attempt of each waits for the other (a retry goes straight through).
      const side = (
        me: "a" | "b",
        first: number,
        second: number,
        mine: typeof aHolds,
        theirs: typeof bHolds,
      ) =>
        db.transaction(async (tx) => {
          const attempt = ++runs[me];
          await tx.query(`UPDATE ${t} SET n = n + 1 WHERE id = $1`, [first]);
          if (attempt === 1) {
            mine.resolve();
            await theirs.promise;
          }
          await tx.query(`UPDATE ${t} SET n = n + 1 WHERE id = $1`, [second]);
          return attempt;
        });
      const [a, b] = await Promise.all([
        side("a", 1, 2, aHolds, bHolds),
        side("b", 2, 1, bHolds, aHolds),
      ]);
      // Exactly one side was chosen as the deadlock victim and ran a second time.
      assert.deepEqual([a, b].sort(), [1, 2], JSON.stringify(runs));
      const rows = await db.query<{ id: number; n: number }>(`SELECT id, n FROM ${t} ORDER BY id`);
      assert.deepEqual(rows.map((r) => r.n), [2, 2], "both transactions' updates landed once");
    } finally {
      await dropNamespace(db, prefix).catch(() => {});
      await db.exec(`DROP TABLE IF EXISTS ${t}`).catch(() => {});
      await db.close();
    }
  },
});

Deno.test({
  name: "a transaction that keeps failing to serialise is given up after the retries",
  ignore,
  async fn() {
    const prefix = `${freshNamespace()}_`;
    const db = await openDb({ url, dataDir: "", maxPoolSize: 2, prefix });
    try {
      let runs = 0;
      await assert.rejects(
        db.transaction(async (tx) => {
          runs++;
          await tx.exec(`DO $$ BEGIN RAISE EXCEPTION 'could not serialize access'
            USING ERRCODE = 'serialization_failure'; END $$`);
        }),
        (e) => e instanceof DbConflictError && e.code === "40001",
      );
      assert.equal(runs, 1 + CONFLICT_RETRIES);
    } finally {
      await db.close();
    }
  },
});

Deno.test({
  name: "PUT /user meeting a serialization failure: retried to a 200, or a 409 conflict, never 500",
  ignore,
  async fn() {
    const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
    try {
      const up = await postJson(srv, "/signup", {
        email: `conflict-${crypto.randomUUID().slice(0, 8)}@example.com`,
        password: "pw-123456",
      });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const token = up.body.access_token as string;
      // A trigger on the users table fails the first `failures` updates as PostgreSQL fails
      // a transaction it cannot serialise; a counter counts the attempts.
      const users = srv.db.t("users"), ctl = srv.db.t("conflict_ctl");
      await srv.db.exec(`
        CREATE TABLE ${ctl} (failures int NOT NULL, attempts int NOT NULL);
        INSERT INTO ${ctl} VALUES (0, 0);
        CREATE FUNCTION ${ctl}_fn() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE left_ int;
        BEGIN
          -- The counter survives the rollback of the failed attempt only outside it: use a
          -- sequence, which is not transactional.
          PERFORM nextval('${ctl}_seq');
          SELECT failures INTO left_ FROM ${ctl};
          IF currval('${ctl}_seq') <= left_ THEN
            RAISE EXCEPTION 'could not serialize access due to concurrent update'
              USING ERRCODE = 'serialization_failure';
          END IF;
          RETURN NEW;
        END $$;
        CREATE SEQUENCE ${ctl}_seq;
        CREATE TRIGGER ${ctl}_trg BEFORE UPDATE ON ${users}
          FOR EACH ROW WHEN (NEW.raw_user_meta_data IS DISTINCT FROM OLD.raw_user_meta_data)
          EXECUTE FUNCTION ${ctl}_fn();`);
      const arm = async (failures: number) => {
        await srv.db.exec(`UPDATE ${ctl} SET failures = ${failures};
          SELECT setval('${ctl}_seq', 1, false);`);
      };
      const attempts = async () =>
        (await srv.db.query<{ n: number }>(
          `SELECT CASE WHEN is_called THEN last_value ELSE 0 END::int AS n FROM ${ctl}_seq`,
        ))[0].n;

      // Fails once: the retry commits, the client sees nothing but a 200.
      await arm(1);
      const ok = await call(srv, "PUT", "/user", {
        body: { data: { colour: "green" } },
        token: token,
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal((ok.body.user_metadata as Record<string, unknown>).colour, "green");
      assert.equal(await attempts(), 2);

      // Fails every time: 409 conflict with Retry-After after 1 + CONFLICT_RETRIES attempts,
      // and nothing written.
      await arm(1000);
      const res = await srv.fetch("/user", {
        method: "PUT",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ data: { colour: "blue" } }),
      });
      const body = await res.json();
      assert.equal(res.status, 409, JSON.stringify(body));
      assert.equal(body.error_code, "conflict");
      assert.equal(body.code, 409);
      assert.match(body.msg, /retry/);
      assert.doesNotMatch(JSON.stringify(body), /serializ|40001|trigger/i, "no internals");
      assert.equal(res.headers.get("retry-after"), "1");
      assert.equal(await attempts(), 1 + CONFLICT_RETRIES);
      const me = await call(srv, "GET", "/user", { token: token });
      assert.equal((me.body.user_metadata as Record<string, unknown>).colour, "green");
    } finally {
      const ctl = srv.db.t("conflict_ctl");
      await srv.db.exec(`DROP TRIGGER IF EXISTS ${ctl}_trg ON ${srv.db.t("users")};
        DROP SEQUENCE IF EXISTS ${ctl}_seq;`).catch(() => {});
      await srv.close();
    }
  },
});

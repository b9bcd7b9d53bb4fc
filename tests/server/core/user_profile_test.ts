/**
 * GET /user keeps each user's answer with the profile revision it was built at
 * (server/api/user_profile.ts, migrations/0009_profile_rev.sql). These tests
 * change the user row, identities and factors behind the server's back, in
 * plain SQL as another process or an operator would, and through the API, and
 * check that the next GET /user shows the database as it is; that signed-out
 * sessions and deleted users are refused although an answer is kept; and that
 * writing the user row first keeps concurrent writers from deadlocking.
 */
import assert from "node:assert/strict";
import { dropNamespace, startTestServer, testDatabaseUrl } from "../../helpers/server.ts";
import { openDb } from "../../../server/db/db.ts";
import { startServerProcess } from "../../helpers/process.ts";
import { passwordGrant, signUpSession } from "./_helpers.ts";
import {
  PROFILE_CHARS_PER_USER,
  ProfileCache,
  profileCache,
} from "../../../server/api/user_profile.ts";
import type { TestServer } from "../../helpers/server.ts";
import { bearer, call, type Json, uniqueEmail } from "../../helpers/http.ts";

async function me(srv: TestServer, token: string): Promise<{ status: number; text: string }> {
  const res = await srv.fetch("/user", { headers: bearer(token) });
  return { status: res.status, text: await res.text() };
}

Deno.test("GET /user shows every change of the user, its identities and factors at the next request", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv, uniqueEmail("rev"));
    const id = (s.user as Json).id as string;
    const sql = (text: string, params: unknown[] = [id]) => srv.db.query(text, params);
    const users = srv.db.t("users");
    const identities = srv.db.t("identities");
    const factors = srv.services.mfa.factors;
    const get = async () => {
      const r = await me(srv, s.access_token);
      assert.equal(r.status, 200, r.text);
      return JSON.parse(r.text) as Json;
    };

    const first = await me(srv, s.access_token);
    assert.equal(profileCache(srv.services).get(id)?.body, first.text, "the answer is kept");
    assert.equal((await me(srv, s.access_token)).text, first.text);

    // The user row, changed in SQL.
    await sql(`UPDATE ${users} SET raw_user_meta_data = '{"plan":"pro"}' WHERE id = $1`);
    assert.deepEqual((await get()).user_metadata, { plan: "pro" });
    await sql(`UPDATE ${users} SET phone = '15550001111' WHERE id = $1`);
    assert.equal((await get()).phone, "15550001111");

    // An identity: updated, added, deleted.
    await sql(
      `UPDATE ${identities} SET identity_data = identity_data || '{"nickname":"ada"}' WHERE user_id = $1`,
    );
    let u = await get();
    assert.equal(((u.identities as Json[])[0].identity_data as Json).nickname, "ada");
    await sql(
      `INSERT INTO ${identities} (user_id, provider, provider_id, identity_data)
       VALUES ($1, 'github', 'gh-1', '{"sub":"gh-1"}')`,
    );
    u = await get();
    assert.deepEqual((u.identities as Json[]).map((i) => i.provider), ["email", "github"]);
    await sql(`DELETE FROM ${identities} WHERE user_id = $1 AND provider = 'github'`);
    assert.deepEqual(((await get()).identities as Json[]).map((i) => i.provider), ["email"]);

    // A factor: added, renamed, deleted.
    assert.equal((await get()).factors, undefined);
    await sql(
      `INSERT INTO ${factors} (user_id, factor_type, friendly_name, status)
       VALUES ($1, 'totp', 'phone app', 'verified')`,
    );
    u = await get();
    assert.deepEqual((u.factors as Json[]).map((f) => [f.friendly_name, f.status]), [
      ["phone app", "verified"],
    ]);
    await sql(`UPDATE ${factors} SET friendly_name = 'laptop' WHERE user_id = $1`);
    assert.equal(((await get()).factors as Json[])[0].friendly_name, "laptop");
    await sql(`DELETE FROM ${factors} WHERE user_id = $1`);
    assert.equal((await get()).factors, undefined);

    // Through the API.
    const put = await call(srv, "PUT", "/user", {
      body: { data: { theme: "dark" } },
      headers: bearer(s.access_token),
    });
    assert.equal(put.status, 200);
    assert.deepEqual((await get()).user_metadata, { plan: "pro", theme: "dark" });

    // The kept answer is the one a fresh build gives.
    const kept = (await me(srv, s.access_token)).text;
    profileCache(srv.services).delete(id);
    assert.equal((await me(srv, s.access_token)).text, kept);
  } finally {
    await srv.close();
  }
});

Deno.test("GET /user refuses an ended session and a deleted user although their answer is kept", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const address = uniqueEmail("gone");
    const s1 = await signUpSession(srv, address);
    const s2 = (await passwordGrant(srv, { email: address, password: "secret-pw-1" })).body;
    const id = (s1.user as Json).id as string;
    assert.equal((await me(srv, s1.access_token)).status, 200);
    assert.equal((await me(srv, s2.access_token as string)).status, 200);
    assert.ok(profileCache(srv.services).get(id));

    const out = await srv.fetch("/logout?scope=local", {
      method: "POST",
      headers: bearer(s1.access_token),
    });
    assert.equal(out.status, 204);
    const ended = await me(srv, s1.access_token);
    assert.equal(ended.status, 403);
    assert.equal(JSON.parse(ended.text).error_code, "session_not_found");
    assert.equal((await me(srv, s2.access_token as string)).status, 200);

    const del = await srv.fetch(`/admin/users/${id}`, {
      method: "DELETE",
      headers: bearer(await srv.serviceRoleToken()),
    });
    assert.equal(del.status, 200, await del.text());
    const deleted = await me(srv, s2.access_token as string);
    assert.equal(deleted.status, 403);
    assert.equal(JSON.parse(deleted.text).error_code, "user_not_found");
    assert.equal(profileCache(srv.services).get(id), undefined, "a deleted user's answer goes");
  } finally {
    await srv.close();
  }
});

Deno.test("profile revision: each write takes a new one, once per transaction", async () => {
  const srv = await startTestServer({});
  try {
    const { users } = srv.services;
    const rev = async (id: string) =>
      (await srv.db.query<{ r: number }>(
        `SELECT profile_rev AS r FROM ${srv.db.t("users")} WHERE id = $1`,
        [
          id,
        ],
      ))[0].r;
    const user = await srv.db.transaction((tx) =>
      users.createWithIdentities({ email: uniqueEmail("r") }, ["email"], tx)
    );
    const seen = new Set([await rev(user.id)]);
    const step = async (what: string, fn: () => Promise<unknown>) => {
      await fn();
      const r = await rev(user.id);
      assert.ok(!seen.has(r), `${what}: revision ${r} again`);
      seen.add(r);
    };
    await step("user update", () => users.update(user.id, { raw_user_meta_data: { a: 1 } }));
    await step("identity update", () => users.syncLocalIdentity(user, "email"));
    // An identity written after the user row in one transaction takes no second revision.
    const seq = async () =>
      (await srv.db.query<{ v: number }>(
        `SELECT last_value AS v FROM ${srv.db.t("users")}_profile_rev_seq`,
      ))[0].v;
    const drawn = await seq();
    await step(
      "user row, then identity, in one transaction",
      () =>
        srv.db.transaction(async (tx) => {
          await users.update(user.id, { raw_user_meta_data: { b: 2 } }, tx);
          await tx.query(
            `UPDATE ${srv.db.t("identities")} SET identity_data = identity_data || '{"x":1}'
           WHERE user_id = $1`,
            [user.id],
          );
        }),
    );
    assert.equal(await seq(), drawn + 1);
    await step("lockProfile", () => srv.db.transaction((tx) => users.lockProfile(user.id, tx)));
    await step("hard delete of another user changes nothing here", async () => {
      const other = await users.create({ email: uniqueEmail("o") });
      await users.delete(other.id);
      await users.update(user.id, {}); // a new revision of its own, for `step`
    });
  } finally {
    await srv.close();
  }
});

/** Waits until a backend is blocked on a lock in a statement that contains `text`. */
async function waitForLockWait(
  db: { query<T>(sql: string, p?: unknown[]): Promise<T[]> },
  text: string,
) {
  for (let i = 0; i < 2000; i++) {
    const rows = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
      [text],
    );
    if (rows[0].n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no statement containing ${text} came to wait for a lock`);
}

Deno.test({
  name: "writers that take the user row first do not deadlock (PostgreSQL)",
  ignore: !testDatabaseUrl(),
  fn: async () => {
    const srv = await startTestServer({}, { backend: "postgres" });
    try {
      const { users } = srv.services;
      const user = await srv.db.transaction((tx) =>
        users.createWithIdentities({ email: uniqueEmail("dl") }, ["email"], tx)
      );
      // T1 writes the user row, then (later) its e-mail identity. T2 writes the same identity
      // meanwhile, outside a transaction of the caller. Had T2 locked the identity first (as a
      // bare UPDATE of identities does, the trigger taking the user row after it), T1's second
      // write and T2's trigger would wait for each other until PostgreSQL cancelled one.
      let t2: Promise<unknown> | undefined;
      await srv.db.transaction(async (tx) => {
        await users.update(user.id, { raw_user_meta_data: { t: 1 } }, tx);
        t2 = users.syncLocalIdentity(user, "email").then(() => null, (e) => e);
        // T2 is waiting once one of its statements on this namespace's tables waits for a lock
        await waitForLockWait(srv.db, srv.db.t("users").slice(0, -"users".length));
        await users.syncLocalIdentity(user, "email", tx);
      });
      assert.equal(await t2, null, "the concurrent identity write failed");
    } finally {
      await srv.close();
    }
  },
});

Deno.test({
  name: "a change made through one server process shows in another's kept GET /user at once",
  ignore: !testDatabaseUrl(),
  fn: async () => {
    const env = {
      DATABASE_URL: testDatabaseUrl(),
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
      LOG_LEVEL: "error",
    };
    const a = await startServerProcess(env);
    const b = await startServerProcess({ ...env, AUTHSVC_DB_NAMESPACE: a.env.AUTHSVC_DB_NAMESPACE })
      .catch(async (e) => {
        await a.stop();
        throw e;
      });
    try {
      const up = await fetch(`${a.url}/signup`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: uniqueEmail("two"), password: "secret-pw-1" }),
      });
      const s = await up.json();
      assert.equal(up.status, 200, JSON.stringify(s));
      const h = bearer(s.access_token);
      const get = async () => {
        const r = await fetch(`${a.url}/user`, { headers: h });
        assert.equal(r.status, 200);
        return await r.json();
      };
      assert.deepEqual((await get()).user_metadata, {});
      assert.deepEqual((await get()).user_metadata, {}); // kept by a now
      for (let i = 1; i <= 3; i++) {
        const put = await fetch(`${b.url}/user`, {
          method: "PUT",
          headers: { ...h, "content-type": "application/json" },
          body: JSON.stringify({ data: { n: i } }),
        });
        assert.equal(put.status, 200);
        await put.body?.cancel();
        assert.deepEqual((await get()).user_metadata, { n: i });
      }
      const out = await fetch(`${b.url}/logout`, { method: "POST", headers: h });
      assert.equal(out.status, 204);
      const r = await fetch(`${a.url}/user`, { headers: h });
      assert.equal(r.status, 403);
      assert.equal((await r.json()).error_code, "session_not_found");
    } finally {
      await b.stop();
      await a.stop();
      const db = await openDb({ url: testDatabaseUrl(), dataDir: "", maxPoolSize: 1, prefix: "" });
      await dropNamespace(db, `${a.env.AUTHSVC_DB_NAMESPACE}_`);
      await db.close();
    }
  },
});

Deno.test("AUTHSVC_API_USER_CACHE_SIZE bounds the kept answers and their size; 0 keeps none", async () => {
  const cache = new ProfileCache(2);
  cache.set("a", 1, "A");
  cache.set("b", 1, "B");
  cache.set("a", 2, "A2"); // kept again: now the newest
  cache.set("c", 1, "C");
  assert.equal(cache.size, 2);
  assert.equal(cache.get("b"), undefined, "the oldest kept went first");
  assert.deepEqual(cache.get("a"), { rev: 2, body: "A2" });

  // Large answers (a user's metadata may be 16 kB): the characters bound them too.
  const big = new ProfileCache(10);
  assert.equal(big.maxChars, 10 * PROFILE_CHARS_PER_USER);
  const third = "x".repeat(Math.floor(big.maxChars / 4)); // three fit with their suffix
  for (let i = 0; i < 100; i++) {
    big.set(`u${i}`, 1, third + i);
    assert.ok(
      big.chars <= big.maxChars && big.size <= 3,
      `${big.size} answers, ${big.chars} chars`,
    );
  }
  assert.equal(big.get("u99")?.body, third + 99, "the newest is kept");
  assert.equal(big.get("u0"), undefined);
  big.set("huge", 1, "x".repeat(big.maxChars + 1));
  assert.equal(big.get("huge"), undefined, "an answer over the whole bound is built every time");
  big.set("u99", 2, "small");
  assert.equal(big.chars, big.get("u98")!.body.length + big.get("u97")!.body.length + 5);

  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_API_USER_CACHE_SIZE: "0",
  });
  try {
    const s = await signUpSession(srv, uniqueEmail("none"));
    const first = await me(srv, s.access_token);
    assert.equal(first.status, 200);
    assert.equal(profileCache(srv.services).size, 0);
    await call(srv, "PUT", "/user", { body: { data: { k: 1 } }, headers: bearer(s.access_token) });
    assert.deepEqual(JSON.parse((await me(srv, s.access_token)).text).user_metadata, { k: 1 });
  } finally {
    await srv.close();
  }
});

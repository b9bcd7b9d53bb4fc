/**
 * Refresh-token rotation and reuse detection (RFC 9700 §4.14.2), in one process and across two.
 * Reuse after the interval, a lost answer retried late and a stolen token replayed are in
 * tests/server/security/refresh_reuse_test.ts.
 */
import assert from "node:assert/strict";
import { dropNamespace, startTestServer, testDatabaseUrl } from "../../helpers/server.ts";
import { startServerProcess } from "../../helpers/process.ts";
import { openDb } from "../../../server/db/db.ts";
import { refreshGrant, signUpSession } from "./_helpers.ts";
import { uniqueEmail } from "../../helpers/http.ts";

Deno.test("reuse of the previous token within the interval returns the same child", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv);
    const a = await refreshGrant(srv, s.refresh_token);
    const b = await refreshGrant(srv, s.refresh_token);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.equal(b.body.refresh_token, a.body.refresh_token);
    // the child itself still rotates normally
    const c = await refreshGrant(srv, a.body.refresh_token as string);
    assert.equal(c.status, 200);
    assert.notEqual(c.body.refresh_token, a.body.refresh_token);
  } finally {
    await srv.close();
  }
});

Deno.test("reuse of an older token within the interval returns the live token", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv);
    const t1 = (await refreshGrant(srv, s.refresh_token)).body.refresh_token as string;
    const t2 = (await refreshGrant(srv, t1)).body.refresh_token as string;
    const again = await refreshGrant(srv, s.refresh_token); // grandparent, used a moment ago
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.refresh_token, t2);
    assert.equal((await refreshGrant(srv, t2)).status, 200);
  } finally {
    await srv.close();
  }
});

Deno.test("with rotation off the refresh token stays the same and keeps working", async () => {
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: "false",
  });
  try {
    const s = await signUpSession(srv);
    for (let i = 0; i < 3; i++) {
      const r = await refreshGrant(srv, s.refresh_token);
      assert.equal(r.status, 200);
      assert.equal(r.body.refresh_token, s.refresh_token);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("one server: the same token exchanged many times at once yields one child", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv);
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => refreshGrant(srv, s.refresh_token)),
    );
    for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(new Set(answers.map((a) => a.body.refresh_token)).size, 1);
  } finally {
    await srv.close();
  }
});

Deno.test({
  name: "two server processes on one PostgreSQL: concurrent exchanges never fork the family",
  ignore: !Deno.env.get("DATABASE_URL"),
  fn: async () => {
    const ns = `t${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    const env = {
      DATABASE_URL: testDatabaseUrl(),
      AUTHSVC_DB_NAMESPACE: ns,
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
      // Long enough that the burst below always fits in it, however busy the
      // machine; "after the interval" is made by ageing the rows, not by waiting.
      AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "1h",
      AUTHSVC_DB_MAX_POOL_SIZE: "10",
      LOG_LEVEL: "warn",
    };
    const [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    const post = (base: string, path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    try {
      const signUp = await post(a.url, "/signup", {
        email: uniqueEmail("two"),
        password: "secret-pw-1",
      });
      assert.equal(signUp.status, 200, JSON.stringify(signUp.body));
      const parent = signUp.body.refresh_token as string;
      const exchange = (i: number) =>
        post(i % 2 ? a.url : b.url, "/token?grant_type=refresh_token", { refresh_token: parent });

      // within the interval: every answer is the same child
      const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => exchange(i)));
      for (const r of burst) assert.equal(r.status, 200, JSON.stringify(r.body));
      const children = new Set(burst.map((r) => r.body.refresh_token));
      assert.equal(children.size, 1);
      const [child] = children;

      // Two hours pass: every token's times move back in the shared database, which is what
      // both processes read the interval from.
      const age = async () => {
        const aging = await openDb({
          url: testDatabaseUrl(),
          dataDir: "",
          maxPoolSize: 1,
          prefix: `${ns}_`,
        });
        try {
          await aging.query(
            `UPDATE ${aging.t("refresh_tokens")}
             SET created_at = created_at - interval '2 hours',
               updated_at = updated_at - interval '2 hours'`,
          );
        } finally {
          await aging.close();
        }
      };
      // After the interval the parent of the live token still gets it (its client may never
      // have seen the answer), from either process.
      await age();
      const kept = await Promise.all(Array.from({ length: 10 }, (_, i) => exchange(i)));
      for (const r of kept) assert.equal(r.body.refresh_token, child, JSON.stringify(r.body));
      // Once the child rotated, two hours after the parent's use, the parent is two back: every
      // answer is an error, and the family is revoked.
      const next = await post(a.url, "/token?grant_type=refresh_token", { refresh_token: child });
      assert.equal(next.status, 200, JSON.stringify(next.body));
      await age();
      const late = await Promise.all(Array.from({ length: 20 }, (_, i) => exchange(i)));
      for (const r of late) {
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.ok(
          ["refresh_token_already_used", "refresh_token_not_found"].includes(r.body.error_code),
          r.body.error_code,
        );
      }
      const again = await post(b.url, "/token?grant_type=refresh_token", {
        refresh_token: next.body.refresh_token,
      });
      assert.equal(again.status, 400);
    } finally {
      assert.equal(await a.stop(), 0);
      assert.equal(await b.stop(), 0);
      const db = await openDb({
        url: testDatabaseUrl(),
        dataDir: "",
        maxPoolSize: 1,
        prefix: `${ns}_`,
      });
      await dropNamespace(db, `${ns}_`);
      await db.close();
    }
  },
});

import assert from "node:assert/strict";
import { postJson, startTestServer } from "../../helpers/server.ts";
import { abandonWhileHashWaits, passwordGrant, refreshGrant, signUpSession } from "./_helpers.ts";
import { bearer, call, uniqueEmail } from "../../helpers/http.ts";

Deno.test("password grant: right password signs in; wrong password and unknown user answer alike", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const a = uniqueEmail("pw");
    await signUpSession(srv, a);
    const ok = await passwordGrant(srv, { email: a.toUpperCase(), password: "secret-pw-1" });
    assert.equal(ok.status, 200);
    assert.equal((ok.body.user as { email: string }).email, a);
    assert.ok((ok.body.user as { last_sign_in_at?: string }).last_sign_in_at);
    const wrong = await passwordGrant(srv, { email: a, password: "nope-nope" });
    const unknown = await passwordGrant(srv, {
      email: uniqueEmail("ghost"),
      password: "nope-nope",
    });
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.body, unknown.body);
    assert.deepEqual(wrong.body, {
      code: 400,
      error_code: "invalid_credentials",
      msg: "Invalid login credentials",
    });
    const missing = await passwordGrant(srv, { password: "x" });
    assert.equal(missing.status, 400);
    assert.match(String(missing.body.msg), /email or phone/);
    const form = await srv.fetch("/token?grant_type=password", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ email: a, password: "secret-pw-1" }),
    });
    assert.equal(form.status, 200);
    await form.body?.cancel();
  } finally {
    await srv.close();
  }
});

Deno.test("refresh_token grant rotates; unknown grant types and bad bodies are named 4xx", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv);
    const r1 = await refreshGrant(srv, s.refresh_token);
    assert.equal(r1.status, 200);
    assert.notEqual(r1.body.refresh_token, s.refresh_token);
    const r2 = await refreshGrant(srv, r1.body.refresh_token as string);
    assert.equal(r2.status, 200);
    const nf = await refreshGrant(srv, "not-a-token");
    assert.equal(nf.status, 400);
    assert.equal(nf.body.error_code, "refresh_token_not_found");
    const empty = await postJson(srv, "/token?grant_type=refresh_token", {});
    assert.equal(empty.status, 400);
    assert.match(String(empty.body.msg), /refresh_token/);

    const u = await postJson(srv, "/token?grant_type=magic", {});
    assert.equal(u.status, 400);
    assert.equal(u.body.error_code, "unsupported_grant_type");
    assert.match(String(u.body.msg), /magic/);
    const none = await postJson(srv, "/token", {});
    assert.equal(none.body.error_code, "unsupported_grant_type");
    assert.match(String(none.body.msg), /grant_type/);

    const bad = await srv.fetch("/token?grant_type=password", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error_code, "bad_json");
    const arr = await srv.fetch("/token?grant_type=password", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "[1,2]",
    });
    assert.equal(arr.status, 400);
    await arr.body?.cancel();
    const typed = await passwordGrant(srv, { email: ["a"], password: "x" });
    assert.equal(typed.status, 400);
    assert.match(String(typed.body.msg), /email must be a string/);
    const huge = await srv.fetch("/token?grant_type=password", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "a@b.co", password: "x".repeat(2 << 20) }),
    });
    assert.equal(huge.status, 413);
    assert.match((await huge.json()).msg, /larger than/);
    // A chunked body (no Content-Length) is counted as it arrives: 413 too, and one under
    // the limit is read.
    const chunked = (kib: number) => {
      const chunk = new TextEncoder().encode(" ".repeat(1024));
      let sent = 0;
      return srv.fetch("/token?grant_type=password", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: new ReadableStream({
          pull(c) {
            if (sent === 0) c.enqueue(new TextEncoder().encode('{"email":"a@b.co"'));
            if (sent++ < kib) c.enqueue(chunk);
            else {
              c.enqueue(new TextEncoder().encode("}"));
              c.close();
            }
          },
        }),
      });
    };
    const over = await chunked(1100);
    assert.equal(over.status, 413);
    assert.match((await over.json()).msg, /larger than/);
    const under = await chunked(10);
    assert.equal(under.status, 400);
    assert.equal((await under.json()).msg, "password is required");
  } finally {
    await srv.close();
  }
});

Deno.test("GET and PUT /user: metadata merge, password change, same_password, sessions", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const a = uniqueEmail("me");
    const s = await signUpSession(srv, a);
    const other = await passwordGrant(srv, { email: a, password: "secret-pw-1" });
    const h = bearer(s.access_token);
    const me = await call(srv, "GET", "/user", { headers: h });
    assert.equal(me.status, 200);
    assert.equal(me.body.email, a);
    assert.equal((me.body.identities as unknown[]).length, 1);

    let up = await call(srv, "PUT", "/user", { body: { data: { a: 1, b: 2 } }, headers: h });
    assert.equal(up.status, 200);
    up = await call(srv, "PUT", "/user", { body: { data: { b: null, c: 3 } }, headers: h });
    assert.deepEqual(up.body.user_metadata, { a: 1, c: 3 });

    const same = await call(srv, "PUT", "/user", { body: { password: "secret-pw-1" }, headers: h });
    assert.equal(same.status, 422);
    assert.equal(same.body.error_code, "same_password");
    const weak = await call(srv, "PUT", "/user", { body: { password: "x" }, headers: h });
    assert.equal(weak.body.error_code, "weak_password");
    const changed = await call(srv, "PUT", "/user", {
      body: { password: "new-secret-2" },
      headers: h,
    });
    assert.equal(changed.status, 200);
    assert.equal((await passwordGrant(srv, { email: a, password: "secret-pw-1" })).status, 400);
    assert.equal((await passwordGrant(srv, { email: a, password: "new-secret-2" })).status, 200);
    // the other session ended with the password change; this one lives on
    assert.equal((await refreshGrant(srv, other.body.refresh_token as string)).status, 400);
    assert.equal((await refreshGrant(srv, s.refresh_token)).status, 200);

    const noAuth = await call(srv, "GET", "/user");
    assert.equal(noAuth.status, 401);
    assert.equal(noAuth.body.error_code, "no_authorization");
    const badJwt = await call(srv, "GET", "/user", { headers: bearer("a.b.c") });
    assert.equal(badJwt.status, 403);
    assert.equal(badJwt.body.error_code, "bad_jwt");
    const badData = await call(srv, "PUT", "/user", { body: { data: "x" }, headers: h });
    assert.equal(badData.status, 400);
    assert.match(String(badData.body.msg), /data/);
  } finally {
    await srv.close();
  }
});

Deno.test("logout scopes: local, others, global", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const a = uniqueEmail("out");
    const s1 = await signUpSession(srv, a);
    const s2 = (await passwordGrant(srv, { email: a, password: "secret-pw-1" })).body;
    const s3 = (await passwordGrant(srv, { email: a, password: "secret-pw-1" })).body;

    const bad = await call(srv, "POST", "/logout?scope=everything", {
      headers: bearer(s1.access_token),
    });
    assert.equal(bad.status, 400);
    assert.match(String(bad.body.msg), /scope/);

    let r = await call(srv, "POST", "/logout?scope=others", { headers: bearer(s1.access_token) });
    assert.equal(r.status, 204);
    assert.equal((await refreshGrant(srv, s2.refresh_token as string)).status, 400);
    assert.equal((await refreshGrant(srv, s3.refresh_token as string)).status, 400);
    const still = await refreshGrant(srv, s1.refresh_token);
    assert.equal(still.status, 200);

    r = await call(srv, "POST", "/logout?scope=local", {
      headers: bearer(still.body.access_token as string),
    });
    assert.equal(r.status, 204);
    const gone = await call(srv, "GET", "/user", {
      headers: bearer(still.body.access_token as string),
    });
    assert.equal(gone.status, 403);
    assert.equal(gone.body.error_code, "session_not_found");

    const s4 = (await passwordGrant(srv, { email: a, password: "secret-pw-1" })).body;
    const s5 = (await passwordGrant(srv, { email: a, password: "secret-pw-1" })).body;
    r = await call(srv, "POST", "/logout", { headers: bearer(s4.access_token as string) });
    assert.equal(r.status, 204);
    assert.equal((await refreshGrant(srv, s5.refresh_token as string)).status, 400);
  } finally {
    await srv.close();
  }
});

Deno.test("sign-up, sign-in, refresh and logout emit events and write the audit log", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const seen: string[] = [];
    for (const name of ["signup", "signin", "token_refresh"]) {
      srv.services.events.on(name, (attrs) => seen.push(`${name}:${attrs.method ?? ""}`));
    }
    const a = uniqueEmail("audit");
    const s = await signUpSession(srv, a);
    const signIn = await passwordGrant(srv, { email: a, password: "secret-pw-1" });
    await refreshGrant(srv, signIn.body.refresh_token as string);
    await call(srv, "POST", "/logout", { headers: bearer(s.access_token) });
    assert.deepEqual(seen, ["signup:email", "signin:password", "token_refresh:"]);
    const rows = await srv.db.query<{ payload: { action: string; actor_id: string } }>(
      `SELECT payload FROM ${srv.db.t("audit_log_entries")} ORDER BY created_at`,
    );
    const userId = (s.user as { id: string }).id;
    assert.deepEqual(
      rows.filter((r) => r.payload.actor_id === userId).map((r) => r.payload.action),
      ["user_signedup", "login", "token_refreshed", "logout"],
    );
    // nothing secret reaches the audit log
    const all = JSON.stringify(rows);
    assert.ok(!all.includes("secret-pw-1"));
    assert.ok(!all.includes(signIn.body.refresh_token as string));
  } finally {
    await srv.close();
  }
});

Deno.test("a NUL character anywhere in a body or the admin filter is a 400 naming the member, not a 500", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv);
    const admin = { authorization: `Bearer ${await srv.serviceRoleToken()}` };
    const cases: [string, string, unknown, Record<string, string>, RegExp][] = [
      [
        "POST",
        "/token?grant_type=password",
        { email: "a\u0000@x.io", password: "p" },
        {},
        /^email /,
      ],
      [
        "PUT",
        "/user",
        { data: { nested: { "k\u0000": 1 } } },
        bearer(s.access_token),
        /^data\.nested\.k/,
      ],
      [
        "POST",
        "/signup",
        { email: uniqueEmail("u"), password: "secret-pw-1", data: { n: "\u0000" } },
        {},
        /^data\.n /,
      ],
      [
        "PUT",
        `/admin/users/${(s.user as { id: string }).id}`,
        { role: "x\u0000" },
        admin,
        /^role /,
      ],
    ];
    for (const [method, path, body, headers, msg] of cases) {
      const r = await call(srv, method, path, { body: body, headers: headers });
      assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.match(String(r.body.msg), msg);
      assert.match(String(r.body.msg), /NUL/);
    }
    const form = await srv.fetch("/token?grant_type=password", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "email=a%00b%40x.io&password=p",
    });
    assert.equal(form.status, 400);
    await form.body?.cancel();
    const list = await call(srv, "GET", "/admin/users?filter=%00", { headers: admin });
    assert.equal(list.status, 400);
    assert.match(String(list.body.msg), /filter/);
  } finally {
    await srv.close();
  }
});

Deno.test("a sign-in whose client went away before its password was checked: no hash, no session", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true", LOG_LEVEL: "info" });
  try {
    const a = uniqueEmail("gone");
    const signedUp = await signUpSession(srv, a);
    const userId = (signedUp.user as { id: string }).id;
    const lastSignIn = () =>
      srv.db.query<{ last: string }>(
        `SELECT last_sign_in_at::text AS last FROM ${srv.db.t("users")} WHERE id = $1`,
        [userId],
      ).then(([r]) => r.last);
    const before = await lastSignIn();
    await abandonWhileHashWaits(srv, "/token?grant_type=password", "/token", {
      email: a,
      password: "secret-pw-1",
    });
    // Nothing was decided for the sign-in: no session, no sign-in time, no audit entry.
    const [row] = await srv.db.query<{ sessions: number; logins: number }>(
      `SELECT (SELECT count(*)::int FROM ${srv.db.t("sessions")} WHERE user_id = $1) AS sessions,
         (SELECT count(*)::int FROM ${srv.db.t("audit_log_entries")}
           WHERE payload->>'action' = 'login' AND payload->>'actor_id' = $1::text) AS logins`,
      [userId],
    );
    assert.equal(row.sessions, 1, "the sign-up's session only");
    assert.equal(row.logins, 0);
    assert.equal(await lastSignIn(), before);
    // and the next sign-in works as ever
    assert.equal((await passwordGrant(srv, { email: a, password: "secret-pw-1" })).status, 200);
  } finally {
    await srv.close();
  }
});

/**
 * Leaked-password protection (GoTrue's PASSWORD_HIBP_*): passwords being set
 * are checked against a local fake of the Pwned Passwords range API
 * (tests/helpers/hibp_fake.ts), through the HTTP API.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { type HibpFake, startHibpFake } from "../../helpers/hibp_fake.ts";
import { bearer, call, email, passwordGrant, signUpSession } from "./_helpers.ts";

const LEAKED = "correct-horse-battery";
const SHORT_LEAKED = "abc12";
const LISTED_AS_PADDING = "padded-but-unbreached";

async function withHibp(
  env: Record<string, string>,
  fn: (srv: TestServer, fake: HibpFake) => Promise<void>,
) {
  const fake = await startHibpFake({
    [LEAKED]: 3861493,
    [SHORT_LEAKED]: 12,
    [LISTED_AS_PADDING]: 0,
  });
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_PASSWORD_HIBP_ENABLED: "true",
    AUTHSVC_PASSWORD_HIBP_API_URL: fake.url,
    ...env,
  });
  try {
    await fn(srv, fake);
  } finally {
    await srv.close();
    await fake.close();
  }
}

Deno.test("sign-up with a breached password: 422 weak_password, reason pwned", async () => {
  await withHibp({}, async (srv, fake) => {
    const r = await call(srv, "POST", "/signup", { email: email(), password: LEAKED });
    assert.equal(r.status, 422);
    assert.equal(r.body.error_code, "weak_password");
    assert.deepEqual(r.body.weak_password, { reasons: ["pwned"] });
    assert.equal(
      r.body.msg,
      "Password is known to be weak and easy to guess, please choose a different one.",
    );
    // only the 5-digit prefix of the SHA-1 left the server, with padding asked for
    assert.equal(fake.requests.length, 1);
    const q = fake.requests[0];
    assert.equal(q.method, "GET");
    assert.match(q.path, /^\/range\/[0-9A-F]{5}$/);
    assert.equal(q.addPadding, "true");
    assert.ok(q.userAgent);
  });
});

Deno.test("an unbreached password (also one listed only as padding) signs up", async () => {
  await withHibp({}, async (srv, fake) => {
    let r = await call(srv, "POST", "/signup", { email: email(), password: "a-fresh-phrase-9" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    r = await call(srv, "POST", "/signup", { email: email(), password: LISTED_AS_PADDING });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(fake.requests.length, 2);
  });
});

Deno.test("a short breached password names both reasons, as GoTrue does", async () => {
  await withHibp({ AUTHSVC_PASSWORD_MIN_LENGTH: "8" }, async (srv) => {
    const r = await call(srv, "POST", "/signup", { email: email(), password: SHORT_LEAKED });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.weak_password, { reasons: ["length", "pwned"] });
    assert.match(r.body.msg as string, /at least 8 characters\. Password is known to be weak/);
  });
});

Deno.test("changing to a breached password through PUT /user is refused", async () => {
  await withHibp({}, async (srv) => {
    const s = await signUpSession(srv, email(), "a-fresh-phrase-9");
    const r = await call(srv, "PUT", "/user", { password: LEAKED }, bearer(s.access_token));
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.weak_password, { reasons: ["pwned"] });
    const ok = await call(
      srv,
      "PUT",
      "/user",
      { password: "another-fresh-9" },
      bearer(s.access_token),
    );
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });
});

Deno.test("signing in with a breached password works and says weak_password", async () => {
  await withHibp({}, async (srv) => {
    const address = email();
    // an admin may set any password at creation (GoTrue checks only updates)
    const created = await call(
      srv,
      "POST",
      "/admin/users",
      { email: address, password: LEAKED, email_confirm: true },
      bearer(await srv.serviceRoleToken()),
    );
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const r = await passwordGrant(srv, { email: address, password: LEAKED });
    assert.equal(r.status, 200);
    assert.equal(typeof r.body.access_token, "string");
    assert.deepEqual(r.body.weak_password, {
      message: "Password is known to be weak and easy to guess, please choose a different one.",
      reasons: ["pwned"],
    });
  });
});

Deno.test("when the range API fails: allowed and logged, or 500 with FAIL_CLOSED", async () => {
  await withHibp({ LOG_LEVEL: "warn" }, async (srv, fake) => {
    fake.failWith = 503;
    const r = await call(srv, "POST", "/signup", { email: email(), password: LEAKED });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(srv.logs.some((l) => l.includes("leaked-password check failed")));
    assert.ok(!srv.logs.some((l) => l.includes(LEAKED)), "the password never reaches a log line");
  });
  await withHibp({ AUTHSVC_PASSWORD_HIBP_FAIL_CLOSED: "true" }, async (srv, fake) => {
    fake.failWith = 503;
    const r = await call(srv, "POST", "/signup", { email: email(), password: "a-fresh-phrase-9" });
    assert.equal(r.status, 500);
    assert.equal(
      r.body.msg,
      "Unable to perform password strength check with HaveIBeenPwned.org.",
    );
  });
});

Deno.test("with PASSWORD_HIBP_ENABLED off no request is made", async () => {
  await withHibp({ AUTHSVC_PASSWORD_HIBP_ENABLED: "false" }, async (srv, fake) => {
    const r = await call(srv, "POST", "/signup", { email: email(), password: LEAKED });
    assert.equal(r.status, 200);
    assert.equal(fake.requests.length, 0);
  });
});

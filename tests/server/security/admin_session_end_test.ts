/**
 * Attack: an operator's admin token outlives its session (issue 38, item
 * 2). The operator signs out, is banned, or the session passes its time box;
 * `/admin/*` then refuses the token, but it must also open nothing else that
 * accepts an admin role: `POST /invite` and the captcha's admin skip go
 * through the same admin check.
 */
import assert from "node:assert/strict";
import { call, uniqueEmail } from "../../helpers/http.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startFakeCaptcha } from "../ops/_helpers.ts";
import { TestClock } from "../mfa/_helpers.ts";
import { operator, passwordSignIn } from "./_helpers.ts";

const GOOD = "P1_good-captcha-token";

/** What an ended admin token still tries: every route that accepts an admin role. */
async function assertOpensNothing(srv: TestServer, token: string, code: string) {
  const invite = await call(srv, "POST", "/invite", { body: { email: uniqueEmail("inv") }, token });
  assert.equal(invite.status, 403, `POST /invite: ${invite.text}`);
  assert.equal(invite.body.error_code, code, "POST /invite");
  const signup = await call(srv, "POST", "/signup", {
    body: { email: uniqueEmail("bot"), password: "bot-password-1" },
    token,
  });
  assert.equal(signup.status, 400, `captcha skip: ${signup.text}`);
  assert.equal(signup.body.error_code, "captcha_failed", "the captcha is asked for");
  const list = await call(srv, "GET", "/admin/users", { token });
  assert.equal(list.status, 403, list.text);
  assert.equal(list.body.error_code, code);
}

async function withServer(
  env: Record<string, string>,
  fn: (srv: TestServer) => Promise<void>,
  clock?: TestClock,
) {
  const fake = startFakeCaptcha("hcaptcha", { secret: "captcha-secret", goodToken: GOOD });
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: "captcha-secret",
    AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: fake.url,
    ...env,
  }, clock ? { clock } : {});
  try {
    await fn(srv);
  } finally {
    await srv.close();
    await fake.close();
  }
}

/** A signed-in operator's access token, checked to open the admin routes while its session lives. */
async function liveAdminToken(srv: TestServer) {
  const op = await operator(srv);
  const token = await passwordSignIn(srv, op.email, { captchaToken: GOOD });
  const invite = await call(srv, "POST", "/invite", { body: { email: uniqueEmail("ok") }, token });
  assert.equal(invite.status, 200, invite.text);
  const signup = await call(srv, "POST", "/signup", {
    body: { email: uniqueEmail("staff"), password: "staff-password-1" },
    token,
  });
  assert.equal(signup.status, 200, `a live admin session skips the captcha: ${signup.text}`);
  return { op, token };
}

Deno.test("ended admin session: a signed-out operator's token neither invites nor skips the captcha", async () => {
  await withServer({}, async (srv) => {
    const { token } = await liveAdminToken(srv);
    const out = await call(srv, "POST", "/logout", { token });
    assert.equal(out.status, 204, out.text);
    await assertOpensNothing(srv, token, "session_not_found");
  });
});

Deno.test("ended admin session: a banned operator's token neither invites nor skips the captcha", async () => {
  await withServer({}, async (srv) => {
    const { op, token } = await liveAdminToken(srv);
    const ban = await call(srv, "PUT", `/admin/users/${op.userId}`, {
      body: { ban_duration: "24h" },
      token: await srv.serviceRoleToken(),
    });
    assert.equal(ban.status, 200, ban.text);
    await assertOpensNothing(srv, token, "user_banned");
  });
});

Deno.test("ended admin session: an operator's token past the time box neither invites nor skips the captcha", async () => {
  const clock = new TestClock();
  await withServer({ AUTHSVC_SESSIONS_TIMEBOX: "1h", AUTHSVC_JWT_EXP: "86400" }, async (srv) => {
    const { token } = await liveAdminToken(srv);
    clock.advance(61 * 60); // the access token lives a day, the session an hour
    await assertOpensNothing(srv, token, "session_expired");
  }, clock);
});

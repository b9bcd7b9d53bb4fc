/**
 * Attack: an operator's password is phished (issue 38, item 1). The operator
 * (an account with an admin role, the designed way into /console/) protects
 * the account with a TOTP factor, but a password sign-in alone gives an aal1
 * token that carries the admin role. Through the admin API that token would
 * sign in as anyone (`POST /admin/generate_link {type: magiclink}` answers
 * the link). Once the operator has a verified factor, a token bound to a
 * session must be aal2 on every route that accepts an admin role: the
 * `/admin/*` routes, `/invite`, and the captcha's admin skip. Service-role
 * keys (no session) keep working.
 */
import assert from "node:assert/strict";
import { call, type CallResult, uniqueEmail } from "../../helpers/http.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startFakeCaptcha } from "../ops/_helpers.ts";
import { TestClock } from "../mfa/_helpers.ts";
import { operator, passwordSignIn, payloadOf, totpStep } from "./_helpers.ts";

const AAL2_MESSAGE = "AAL2 session is required to use the admin API when MFA is enabled.";

function assertInsufficientAal(r: CallResult, what: string) {
  assert.equal(r.status, 403, `${what}: ${r.text}`);
  assert.equal(r.body.error_code, "insufficient_aal", what);
  assert.equal(r.body.msg, AAL2_MESSAGE, what);
}

/** Every kind of admin call the thief would make, as `token`. */
async function adminCalls(srv: TestServer, token: string, victim: { id: string; email: string }) {
  return {
    list: await call(srv, "GET", "/admin/users", { token }),
    link: await call(srv, "POST", "/admin/generate_link", {
      body: { type: "magiclink", email: victim.email },
      token,
    }),
    read: await call(srv, "GET", `/admin/users/${victim.id}`, { token }),
    write: await call(srv, "PUT", `/admin/users/${victim.id}`, {
      body: { password: "taken-over-password-1" },
      token,
    }),
    invite: await call(srv, "POST", "/invite", { body: { email: uniqueEmail("invited") }, token }),
  };
}

Deno.test("phished operator password: an aal1 sign-in opens no admin route, so cannot sign in as anyone", async () => {
  const clock = new TestClock();
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" }, { clock });
  const now = () => clock.ms;
  try {
    const op = await operator(srv, { totp: true, now });
    const victimEmail = uniqueEmail("victim");
    const up = await call(srv, "POST", "/signup", {
      body: { email: victimEmail, password: "victim-password-1" },
    });
    assert.equal(up.status, 200, up.text);
    const victim = { id: (up.body.user as { id: string }).id, email: victimEmail };

    // The thief has the password only: an aal1 session that still carries the admin role.
    const thief = await passwordSignIn(srv, op.email);
    assert.equal(payloadOf(thief).role, "supabase_admin");
    assert.equal(payloadOf(thief).aal, "aal1");
    const refused = await adminCalls(srv, thief, victim);
    assertInsufficientAal(refused.list, "GET /admin/users");
    assertInsufficientAal(refused.link, "POST /admin/generate_link");
    assert.equal(refused.link.body.action_link, undefined, "no sign-in link for the thief");
    assertInsufficientAal(refused.read, "GET /admin/users/<id>");
    assertInsufficientAal(refused.write, "PUT /admin/users/<id>");
    assertInsufficientAal(refused.invite, "POST /invite");
    // The victim's password was not replaced.
    const victimIn = await call(srv, "POST", "/token?grant_type=password", {
      body: { email: victimEmail, password: "victim-password-1" },
    });
    assert.equal(victimIn.status, 200, victimIn.text);

    // The operator, after the TOTP step on the same kind of session: every call works.
    const own = await passwordSignIn(srv, op.email);
    clock.advance(30); // the next TOTP step: a used code is refused
    const aal2 = await totpStep(srv, own, op, now);
    assert.equal(payloadOf(aal2).aal, "aal2");
    const allowed = await adminCalls(srv, aal2, victim);
    for (const [what, r] of Object.entries(allowed)) {
      assert.equal(r.status, 200, `${what}: ${r.text}`);
    }
    assert.match(String(allowed.link.body.action_link), /\/verify\?token=/);

    // A service-role key has no session: not affected.
    const service = await srv.serviceRoleToken();
    assert.equal((await call(srv, "GET", "/admin/users", { token: service })).status, 200);
    // An operator without a factor has no second step to skip: aal1 is theirs.
    const plain = await operator(srv);
    const plainToken = await passwordSignIn(srv, plain.email);
    assert.equal((await call(srv, "GET", "/admin/users", { token: plainToken })).status, 200);
  } finally {
    await srv.close();
  }
});

Deno.test("phished operator password: an aal1 sign-in does not skip the captcha", async () => {
  const GOOD = "P1_good-captcha-token";
  const fake = startFakeCaptcha("hcaptcha", { secret: "captcha-secret", goodToken: GOOD });
  const clock = new TestClock();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: "captcha-secret",
    AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: fake.url,
  }, { clock });
  const now = () => clock.ms;
  try {
    const op = await operator(srv, { totp: true, captchaToken: GOOD, now });
    const thief = await passwordSignIn(srv, op.email, { captchaToken: GOOD });
    // Scripted sign-ups without a captcha, on the strength of the phished password.
    const bot = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("bot"), password: "bot-password-1" },
      token: thief,
    });
    assert.equal(bot.status, 400, bot.text);
    assert.equal(bot.body.error_code, "captcha_failed");
    // The operator's aal2 session skips it, as GoTrue's admin skip does.
    const own = await passwordSignIn(srv, op.email, { captchaToken: GOOD });
    clock.advance(30);
    const aal2 = await totpStep(srv, own, op, now);
    const byOperator = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("staff"), password: "staff-password-1" },
      token: aal2,
    });
    assert.equal(byOperator.status, 200, byOperator.text);
    assert.deepEqual(fake.problems, []);
  } finally {
    await srv.close();
    await fake.close();
  }
});

/**
 * Bans on every path (issue 17, item 3): a user banned with the admin API
 * (PUT /admin/users/<id> {ban_duration}) gets no tokens by any path, the ban
 * ends their sessions and refresh tokens at once, and `ban_duration: "none"`
 * lets them sign in again. GoTrue's answer: `user_banned` (400 on the
 * password and refresh grants, 403 elsewhere).
 *
 * Every test performs the banned user's attempt through the HTTP API
 * (auth-js where it has the call).
 */
import assert from "node:assert/strict";
import { authJsClient } from "../../helpers/auth_js.ts";
import { GoTrueAdminApi } from "../../helpers/deps.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { local, openLink, withEmail } from "../email/_helpers.ts";
import { TestClock, totpAt } from "../mfa/_helpers.ts";
import { withPhoneServer } from "../phone/_helpers.ts";
import { defaultUser, serverWithFakes, signIn } from "../providers/_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

const PW = "banned-pw-1";

async function ban(srv: TestServer, id: string, duration = "24h") {
  const api = new GoTrueAdminApi({
    url: srv.url,
    headers: { Authorization: `Bearer ${await srv.serviceRoleToken()}` },
  });
  const { data, error } = await api.updateUserById(id, { ban_duration: duration });
  assert.equal(error, null);
  return data.user!;
}

/** A confirmed user signed in with auth-js (the server autoconfirms). */
async function signedUp(srv: TestServer, email = uniqueEmail("ban")) {
  const client = authJsClient(srv.url);
  const { data, error } = await client.signUp({ email, password: PW });
  assert.equal(error, null);
  assert.ok(data.session);
  return { client, email, id: data.user!.id, session: data.session };
}

const AUTOCONFIRM = { AUTHSVC_MAILER_AUTOCONFIRM: "true" };

Deno.test("banned user signs in with a password: refused with user_banned", async () => {
  const srv = await startTestServer(AUTOCONFIRM);
  try {
    const u = await signedUp(srv);
    await ban(srv, u.id);
    const { data, error } = await authJsClient(srv.url).signInWithPassword({
      email: u.email,
      password: PW,
    });
    assert.equal(data.session, null);
    assert.equal(error?.code, "user_banned");
    assert.equal(error?.status, 400);
  } finally {
    await srv.close();
  }
});

Deno.test("ban takes effect at once: the banned user's session and refresh token stop working", async () => {
  const srv = await startTestServer(AUTOCONFIRM);
  try {
    const u = await signedUp(srv);
    await ban(srv, u.id);
    const refreshed = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: u.session.refresh_token,
      },
    });
    assert.equal(refreshed.status, 400);
    assert.ok(!refreshed.body.access_token);
    const me = await call(srv, "GET", "/user", { token: u.session.access_token });
    assert.equal(me.status, 403);
    assert.equal(me.body.error_code, "user_banned", "GoTrue's answer, not session_not_found");
    const put = await call(srv, "PUT", "/user", {
      body: { data: { x: 1 } },
      token: u.session.access_token,
    });
    assert.equal(put.status, 403);
    assert.equal(put.body.error_code, "user_banned");
  } finally {
    await srv.close();
  }
});

Deno.test("GET /user of a banned user: user_banned, also after its answer was kept", async () => {
  const srv = await startTestServer(AUTOCONFIRM);
  try {
    const u = await signedUp(srv);
    const before = await u.client.getUser();
    assert.equal(before.error, null);
    assert.equal(before.data.user?.id, u.id, "the answer is kept for this user now");
    await ban(srv, u.id);
    const after = await u.client.getUser();
    assert.equal(after.data.user, null);
    assert.equal(after.error?.code, "user_banned");
    assert.equal(after.error?.status, 403);
    await ban(srv, u.id, "none");
    const lifted = await call(srv, "GET", "/user", { token: u.session.access_token });
    assert.equal(lifted.status, 403, "the ban ended the session the token names");
    assert.equal(lifted.body.error_code, "session_not_found");
  } finally {
    await srv.close();
  }
});

Deno.test("ban lifted with ban_duration none: the user signs in again", async () => {
  const srv = await startTestServer(AUTOCONFIRM);
  try {
    const u = await signedUp(srv);
    await ban(srv, u.id);
    const lifted = await ban(srv, u.id, "none");
    assert.equal(lifted.banned_until, undefined);
    const { data, error } = await authJsClient(srv.url).signInWithPassword({
      email: u.email,
      password: PW,
    });
    assert.equal(error, null);
    assert.ok(data.session);
  } finally {
    await srv.close();
  }
});

Deno.test("banned user signs in by e-mail code or magic link: no session", async () => {
  await withEmail({ ...AUTOCONFIRM, AUTHSVC_SMTP_LINK_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    const u = await signedUp(srv);
    await ban(srv, u.id);
    const client = authJsClient(srv.url);
    assert.equal((await client.signInWithOtp({ email: u.email })).error, null);
    const mail = await smtp.waitForMail(u.email);
    const code = await client.verifyOtp({ email: u.email, token: mail.code, type: "email" });
    assert.equal(code.data.session, null);
    assert.equal(code.error?.code, "user_banned");

    await client.signInWithOtp({ email: u.email });
    const link = await smtp.waitForMail(u.email);
    const { location } = await openLink(local(srv, link.link));
    const f = new URLSearchParams(location!.hash.slice(1));
    assert.equal(f.get("access_token"), null);
    assert.equal(f.get("error_code"), "user_banned");
  });
});

Deno.test("banned user exchanges a PKCE code obtained before the ban: no session", async () => {
  await withEmail(AUTOCONFIRM, async ({ srv, smtp }) => {
    const u = await signedUp(srv);
    const pkce = authJsClient(srv.url, "pkce");
    assert.equal((await pkce.signInWithOtp({ email: u.email })).error, null);
    const mail = await smtp.waitForMail(u.email);
    const { location } = await openLink(local(srv, mail.link));
    const code = location!.searchParams.get("code");
    assert.ok(code, location!.href);
    await ban(srv, u.id);
    const ex = await pkce.exchangeCodeForSession(code);
    assert.equal(ex.data.session, null);
    assert.equal(ex.error?.code, "user_banned");
  });
});

Deno.test("banned user signs in by SMS code (/otp + /verify sms): no session", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_AUTOCONFIRM: "true" }, async ({ srv, sms }) => {
    const phone = `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const client = authJsClient(srv.url);
    const up = await client.signUp({ phone, password: PW });
    assert.equal(up.error, null);
    await ban(srv, up.data.user!.id);
    assert.equal((await client.signInWithOtp({ phone })).error, null);
    const v = await client.verifyOtp({ phone, token: sms.lastCode(phone)!, type: "sms" });
    assert.equal(v.data.session, null);
    assert.equal(v.error?.code, "user_banned");
  });
});

Deno.test("banned user signs in with a provider: no session", async () => {
  const env = await serverWithFakes(["github"]);
  try {
    const fake = env.fakes.github;
    fake.user = defaultUser();
    const first = await signIn(env.srv, fake);
    const token = first.hash.get("access_token");
    assert.ok(token, first.location.href);
    const me = await call(env.srv, "GET", "/user", { token: token });
    await ban(env.srv, me.body.id as string);
    const again = await signIn(env.srv, fake);
    assert.equal(again.hash.get("access_token"), null);
    assert.equal(again.hash.get("error_code"), "user_banned");
  } finally {
    await env.close();
  }
});

Deno.test("banned anonymous user upgrades to a permanent account: refused, and no new session", async () => {
  const srv = await startTestServer({
    ...AUTOCONFIRM,
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  });
  try {
    const client = authJsClient(srv.url);
    const anon = await client.signInAnonymously();
    assert.equal(anon.error, null);
    await ban(srv, anon.data.user!.id);
    const up = await client.updateUser({ email: uniqueEmail("anon"), password: PW });
    assert.ok(up.error, "the banned anonymous user changed their account");
    const refreshed = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: anon.data.session!.refresh_token,
      },
    });
    assert.equal(refreshed.status, 400);
    assert.ok(!refreshed.body.access_token);
  } finally {
    await srv.close();
  }
});

Deno.test("banned user completes an MFA verification started before the ban: no tokens", async () => {
  const clock = new TestClock();
  const srv = await startTestServer(AUTOCONFIRM, { clock });
  try {
    const u = await signedUp(srv);
    const enrolled = await u.client.mfa.enroll({ factorType: "totp", friendlyName: "app" });
    assert.equal(enrolled.error, null);
    const f = enrolled.data!;
    const challenge = await u.client.mfa.challenge({ factorId: f.id });
    assert.equal(challenge.error, null);
    await ban(srv, u.id);
    const r = await call(srv, "POST", `/factors/${f.id}/verify`, {
      body: {
        challenge_id: challenge.data!.id,
        code: totpAt(f.totp.secret, clock.ms),
      },
      token: u.session.access_token,
    });
    assert.equal(r.status, 403);
    assert.equal(r.body.error_code, "user_banned");
    assert.ok(!r.body.access_token);
  } finally {
    await srv.close();
  }
});

Deno.test("sign-ins racing a ban: no session issued around the ban survives it", async () => {
  const srv = await startTestServer(AUTOCONFIRM);
  try {
    const u = await signedUp(srv);
    const signIns = Array.from(
      { length: 8 },
      () =>
        call(srv, "POST", "/token?grant_type=password", { body: { email: u.email, password: PW } }),
    );
    await ban(srv, u.id);
    const results = await Promise.all(signIns);
    for (const r of results) {
      if (r.status !== 200) {
        assert.equal(r.body.error_code, "user_banned");
        continue;
      }
      const refreshed = await call(srv, "POST", "/token?grant_type=refresh_token", {
        body: {
          refresh_token: r.body.refresh_token,
        },
      });
      assert.equal(refreshed.status, 400, "a session issued before the ban outlived it");
      const me = await call(srv, "GET", "/user", { token: r.body.access_token as string });
      assert.equal(me.status, 403);
    }
  } finally {
    await srv.close();
  }
});

/**
 * Pre-account takeover (issue 17, item 1; server/auth/confirm.ts): a squatter
 * signs up with the owner's address and a password of their own; the account
 * stays unconfirmed. Whichever way the owner then proves the address, the
 * squatter's password, identities and sessions must be dead, and the owner's
 * own sign-up password is the one that works.
 *
 * Every test performs the attack through the HTTP API (auth-js where it has
 * the call) and reads the mails from a real SMTP server.
 */
import assert from "node:assert/strict";
import { authJsClient } from "../../helpers/auth_js.ts";
import { GoTrueAdminApi } from "../../helpers/deps.ts";
import { type TestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { fragment, local, openLink, withEmail } from "../email/_helpers.ts";
import { withPhoneServer } from "../phone/_helpers.ts";
import { defaultUser, serverWithFakes, signIn } from "../providers/_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

/** Mails may go out back to back (the squatter's, then the owner's). */
const MAIL_ENV = { AUTHSVC_SMTP_MAX_FREQUENCY: "0", AUTHSVC_SMTP_LINK_FREQUENCY: "0" };

const SQUATTER_PW = "squatter-pw-1";
const OWNER_PW = "owner-pw-2";

/** grant_type=password; the status and error code. */
async function passwordSignIn(srv: TestServer, email: string, password: string) {
  const r = await call(srv, "POST", "/token?grant_type=password", { body: { email, password } });
  return { status: r.status, code: r.body.error_code as string | undefined, body: r.body };
}

async function assertSquatterLockedOut(srv: TestServer, email: string) {
  const r = await passwordSignIn(srv, email, SQUATTER_PW);
  assert.equal(r.status, 400, `the squatter's password still signs in: ${JSON.stringify(r.body)}`);
  assert.equal(r.code, "invalid_credentials");
}

/** The squatter's sign-up through auth-js; returns the account's id. */
async function squat(srv: TestServer, email: string, data: Record<string, unknown> = {}) {
  const squatter = authJsClient(srv.url);
  const { data: d, error } = await squatter.signUp({
    email,
    password: SQUATTER_PW,
    options: { data },
  });
  assert.equal(error, null);
  assert.equal(d.session, null, "unconfirmed: no session");
  return d.user!.id;
}

function admin(srv: TestServer, token: string): GoTrueAdminApi {
  return new GoTrueAdminApi({ url: srv.url, headers: { Authorization: `Bearer ${token}` } });
}

Deno.test("pre-account takeover by magic link: the owner's /magiclink sign-in kills the squatter's password", async () => {
  await withEmail(MAIL_ENV, async ({ srv, smtp }) => {
    const email = uniqueEmail("ml");
    await squat(srv, email, { display_name: "Support team" });
    await smtp.waitForMail(email, { subject: "Confirm Your Signup" }); // the squatter's mail

    const r = await call(srv, "POST", "/magiclink", { body: { email } });
    assert.equal(r.status, 200);
    const mail = await smtp.waitForMail(email);
    const { location } = await openLink(local(srv, mail.link));
    const f = fragment(location!);
    assert.ok(f.access_token, location!.hash);

    await assertSquatterLockedOut(srv, email);
    const me = await call(srv, "GET", "/user", { token: f.access_token });
    assert.equal(me.status, 200);
    assert.ok(me.body.email_confirmed_at);
    // Only what confirming adds (email_verified, as GoTrue sets it): none of the squatter's
    assert.deepEqual(me.body.user_metadata, { email_verified: true }, "the squatter's metadata");
  });
});

Deno.test("pre-account takeover by e-mail code: the owner's /otp + /verify code kills the squatter's password", async () => {
  await withEmail(MAIL_ENV, async ({ srv, smtp }) => {
    const email = uniqueEmail("otp");
    await squat(srv, email);
    await smtp.waitForMail(email);

    const owner = authJsClient(srv.url);
    assert.equal((await owner.signInWithOtp({ email })).error, null);
    const mail = await smtp.waitForMail(email);
    const { data, error } = await owner.verifyOtp({ email, token: mail.code, type: "email" });
    assert.equal(error, null);
    assert.ok(data.session);

    await assertSquatterLockedOut(srv, email);
    // The owner's session works, and the owner can now choose a password.
    assert.equal((await owner.updateUser({ password: OWNER_PW })).error, null);
    assert.equal((await passwordSignIn(srv, email, OWNER_PW)).status, 200);
  });
});

Deno.test("pre-account takeover by duplicate sign-up: the owner's own sign-up password is the one that works", async () => {
  await withEmail(MAIL_ENV, async ({ srv, smtp }) => {
    const email = uniqueEmail("dup");
    await squat(srv, email, { role_hint: "squatter" });
    await smtp.waitForMail(email); // the squatter's confirmation: the owner ignores it

    const owner = authJsClient(srv.url);
    const signed = await owner.signUp({
      email,
      password: OWNER_PW,
      options: { data: { name: "O" } },
    });
    assert.equal(signed.error, null);
    const ownMail = await smtp.waitForMail(email);

    // The squatter signs up once more: it must not invalidate the owner's own mail.
    await squat(srv, email);
    await smtp.waitForMail(email);

    const { location } = await openLink(local(srv, ownMail.link));
    const f = fragment(location!);
    assert.equal(f.type, "signup", location!.hash);

    await assertSquatterLockedOut(srv, email);
    const ok = await passwordSignIn(srv, email, OWNER_PW);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const user = ok.body.user as Record<string, unknown>;
    assert.deepEqual(user.user_metadata, { name: "O", email_verified: true });
  });
});

Deno.test("pre-account takeover by invite: the invited owner keeps no squatter password", async () => {
  await withEmail(MAIL_ENV, async ({ srv, smtp }) => {
    const email = uniqueEmail("inv");
    await squat(srv, email);
    await smtp.waitForMail(email);

    const { error } = await admin(srv, await srv.serviceRoleToken()).inviteUserByEmail(email);
    assert.equal(error, null);
    const mail = await smtp.waitForMail(email, { subject: "You have been invited" });
    const { location } = await openLink(local(srv, mail.link));
    const f = fragment(location!);
    assert.equal(f.type, "invite", location!.hash);

    await assertSquatterLockedOut(srv, email);
    const set = await call(srv, "PUT", "/user", {
      body: { password: OWNER_PW },
      token: f.access_token,
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.equal((await passwordSignIn(srv, email, OWNER_PW)).status, 200);
  });
});

Deno.test("pre-account takeover by recovery: a reset link that confirms the address kills the squatter's password", async () => {
  await withEmail(MAIL_ENV, async ({ srv, smtp }) => {
    const email = uniqueEmail("rec");
    await squat(srv, email);
    await smtp.waitForMail(email);

    const owner = authJsClient(srv.url);
    assert.equal((await owner.resetPasswordForEmail(email)).error, null);
    const mail = await smtp.waitForMail(email, { subject: "Reset Your Password" });
    const { location } = await openLink(local(srv, mail.link));
    assert.ok(fragment(location!).access_token, location!.hash);

    await assertSquatterLockedOut(srv, email);
  });
});

// With the stricter rule on (SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN); by default the admin
// vouches for the address, as in GoTrue (admin_confirm_test.ts).
Deno.test("pre-account takeover by admin confirmation: email_confirm keeps only a password the admin sets", async () => {
  const env = { ...MAIL_ENV, AUTHSVC_SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN: "true" };
  await withEmail(env, async ({ srv, smtp }) => {
    const email = uniqueEmail("adm");
    const id = await squat(srv, email);
    await smtp.waitForMail(email);

    const api = admin(srv, await srv.serviceRoleToken());
    const { data, error } = await api.updateUserById(id, { email_confirm: true });
    assert.equal(error, null);
    assert.ok(data.user?.email_confirmed_at);
    await assertSquatterLockedOut(srv, email);

    // A password sent with the confirmation is the admin's own: it works.
    const other = uniqueEmail("adm2");
    const id2 = await squat(srv, other);
    await smtp.waitForMail(other);
    const r = await api.updateUserById(id2, { email_confirm: true, password: OWNER_PW });
    assert.equal(r.error, null);
    assert.equal((await passwordSignIn(srv, other, OWNER_PW)).status, 200);
    await assertSquatterLockedOut(srv, other);
  });
});

Deno.test("pre-account takeover by the squatter's old link: a confirmation mail no longer works once the owner proved the address", async () => {
  await withEmail(MAIL_ENV, async ({ srv, smtp }) => {
    const email = uniqueEmail("old");
    await squat(srv, email);
    const squatterMail = await smtp.waitForMail(email);

    const owner = authJsClient(srv.url);
    await owner.signInWithOtp({ email });
    const mail = await smtp.waitForMail(email);
    assert.equal((await owner.verifyOtp({ email, token: mail.code, type: "email" })).error, null);

    // The owner later clicks the sign-up mail they never asked for: nothing comes back.
    const { location } = await openLink(local(srv, squatterMail.link));
    assert.equal(fragment(location!).error_code, "otp_expired", location!.hash);
    await assertSquatterLockedOut(srv, email);
  });
});

Deno.test("pre-account takeover: sessions issued to the account before the owner confirmed it die", async () => {
  await withEmail(MAIL_ENV, async ({ srv, smtp }) => {
    const email = uniqueEmail("ses");
    const id = await squat(srv, email);
    await smtp.waitForMail(email);
    // No HTTP path signs an unconfirmed account in today; a session that exists anyway
    // (an older setting, another server) is made here with the server's own sign-in code.
    const user = (await srv.services.users.findById(id))!;
    const early = await srv.services.sessions.issue(user, { method: "password" });

    const owner = authJsClient(srv.url);
    await owner.signInWithOtp({ email });
    const mail = await smtp.waitForMail(email);
    assert.equal((await owner.verifyOtp({ email, token: mail.code, type: "email" })).error, null);

    const refreshed = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: early.refresh_token,
      },
    });
    assert.equal(refreshed.status, 400);
    assert.equal(refreshed.body.error_code, "refresh_token_not_found");
    const me = await call(srv, "GET", "/user", { token: early.access_token });
    assert.equal(me.status, 403);
    assert.equal(me.body.error_code, "session_not_found");
  });
});

Deno.test("pre-account takeover by phone: the owner's SMS sign-in (/otp + /verify sms) kills the squatter's password", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_MAX_FREQUENCY: "0" }, async ({ srv, sms }) => {
    const phone = `1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const squatter = authJsClient(srv.url);
    const s = await squatter.signUp({ phone: `+${phone}`, password: SQUATTER_PW });
    assert.equal(s.error, null);
    const squatterCode = sms.lastCode(`+${phone}`);
    assert.ok(squatterCode);

    const owner = authJsClient(srv.url);
    assert.equal((await owner.signInWithOtp({ phone: `+${phone}` })).error, null);
    const code = sms.lastCode(`+${phone}`)!;
    assert.notEqual(code, squatterCode);
    const v = await owner.verifyOtp({ phone: `+${phone}`, token: code, type: "sms" });
    assert.equal(v.error, null);

    const r = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        phone: `+${phone}`,
        password: SQUATTER_PW,
      },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error_code, "invalid_credentials");
  });
});

Deno.test("pre-account takeover by provider identity: an unverified copy of the address at a provider is dropped when the owner signs in", async () => {
  const smtp = await startSmtp();
  const env = await serverWithFakes(["github"], { ...smtp.env, ...MAIL_ENV });
  try {
    const { srv } = env;
    const email = uniqueEmail("gh");
    // The squatter registers the owner's address, unverified, at the provider and signs in.
    env.fakes.github.user = defaultUser({ email, emailVerified: false });
    const first = await signIn(srv, env.fakes.github);
    assert.equal(first.hash.get("error_code"), "provider_email_needs_verification");
    await smtp.waitForMail(email, { subject: "Confirm Your Signup" }); // the owner ignores it

    // The owner signs in by e-mail code.
    const owner = authJsClient(srv.url);
    assert.equal((await owner.signInWithOtp({ email })).error, null);
    const mail = await smtp.waitForMail(email);
    const v = await owner.verifyOtp({ email, token: mail.code, type: "email" });
    assert.equal(v.error, null);
    const token = v.data.session!.access_token;

    // The squatter's provider identity is gone: signing in with it reaches nobody's account.
    const again = await signIn(srv, env.fakes.github);
    assert.equal(again.hash.get("access_token"), null, "the squatter got the owner's account");
    const me = await call(srv, "GET", "/user", { token: token });
    assert.deepEqual(
      (me.body.identities as { provider: string }[]).map((i) => i.provider),
      ["email"],
    );
  } finally {
    await env.close();
    await smtp.close();
  }
});

Deno.test("pre-account takeover by duplicate phone sign-up: the owner's own code confirms the owner's password", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_MAX_FREQUENCY: "0" }, async ({ srv, sms }) => {
    const phone = `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const squatter = authJsClient(srv.url);
    assert.equal((await squatter.signUp({ phone, password: SQUATTER_PW })).error, null);
    const owner = authJsClient(srv.url);
    assert.equal((await owner.signUp({ phone, password: OWNER_PW })).error, null);
    const ownCode = sms.lastCode(phone)!;
    // The squatter signs up again: the owner's code keeps working.
    assert.equal((await squatter.signUp({ phone, password: SQUATTER_PW })).error, null);
    const v = await owner.verifyOtp({ phone, token: ownCode, type: "sms" });
    assert.equal(v.error, null);

    const signIn = (password: string) =>
      call(srv, "POST", "/token?grant_type=password", { body: { phone, password } });
    assert.equal((await signIn(OWNER_PW)).status, 200);
    const r = await signIn(SQUATTER_PW);
    assert.equal(r.status, 400);
    assert.equal(r.body.error_code, "invalid_credentials");
  });
});

/**
 * Attack: one mailed code replaces the password of a user with MFA (issue
 * 38, item 4). Whoever reads one mail (a magic link or recovery code) sent
 * it to `POST /verify` with a `password`: the password was replaced without
 * an aal2 session, without ending the owner's other sessions and without
 * the password-changed notice. A password on /verify is now accepted only
 * as the first password of a sign-up or an invite (an account that has none,
 * or that nobody has proven yet); anywhere else it is refused before the
 * code is used, and a password is changed with PUT /user and its rules.
 */
import assert from "node:assert/strict";
import { call, uniqueEmail } from "../../helpers/http.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../../helpers/smtp.ts";
import { TestClock } from "../mfa/_helpers.ts";
import { account, OPERATOR_PASSWORD, passwordSignIn, payloadOf, totpStep } from "./_helpers.ts";

const REFUSED =
  "password can be set on verify only as the first password of a sign-up or an invite; change a password with PUT /user";

async function withMail(fn: (srv: TestServer, smtp: TestSmtp, clock: TestClock) => Promise<void>) {
  const smtp = await startSmtp();
  const clock = new TestClock();
  const srv = await startTestServer({
    ...smtp.env,
    AUTHSVC_SMTP_LINK_FREQUENCY: "0",
    AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: "true",
  }, { clock });
  try {
    await fn(srv, smtp, clock);
  } finally {
    await srv.close();
    await smtp.close();
  }
}

Deno.test("one mailed code replaces an MFA user's password through POST /verify: refused", async () => {
  await withMail(async (srv, smtp, clock) => {
    const now = () => clock.ms;
    const victim = await account(srv, { totp: true, now });
    const owner = await passwordSignIn(srv, victim.email);
    clock.advance(30);
    const ownerAal2 = await totpStep(srv, owner, victim, now);

    for (
      const [request, type, subject] of [
        ["/otp", "email", /Magic Link/i],
        ["/magiclink", "magiclink", /Magic Link/i],
        ["/recover", "recovery", /Reset Your Password/i],
      ] as const
    ) {
      const sent = await call(srv, "POST", request, { body: { email: victim.email } });
      assert.equal(sent.status, 200, sent.text);
      const mail = await smtp.waitForMail(victim.email, { subject });
      const taken = await call(srv, "POST", "/verify", {
        body: { type, email: victim.email, token: mail.code, password: "attackers-password-1" },
      });
      assert.equal(taken.status, 422, `${type}: ${taken.text}`);
      assert.equal(taken.body.error_code, "validation_failed");
      assert.equal(taken.body.msg, REFUSED);
      assert.equal(taken.body.access_token, undefined);
      // Refused before the code was used: without a password it signs in as it always did (aal1).
      const plain = await call(srv, "POST", "/verify", {
        body: { type, email: victim.email, token: mail.code },
      });
      assert.equal(plain.status, 200, `${type} without a password: ${plain.text}`);
      assert.equal(payloadOf(plain.body.access_token as string).aal, "aal1");
    }
    // The password is the owner's, the owner's session lives, no notice was needed.
    const attacker = await call(srv, "POST", "/token?grant_type=password", {
      body: { email: victim.email, password: "attackers-password-1" },
    });
    assert.equal(attacker.status, 400, attacker.text);
    assert.equal(
      (await passwordSignIn(srv, victim.email, { password: OPERATOR_PASSWORD })).length > 0,
      true,
    );
    assert.equal((await call(srv, "GET", "/user", { token: ownerAal2 })).status, 200);
    await smtp.expectNoMail(victim.email, 200);
  });
});

Deno.test("a password on /verify still sets the first password of a sign-up or an invite", async () => {
  await withMail(async (srv, smtp) => {
    // An invite: the invited person chooses their first password with the code.
    const invited = uniqueEmail("invited");
    const inv = await call(srv, "POST", "/invite", {
      body: { email: invited },
      token: await srv.serviceRoleToken(),
    });
    assert.equal(inv.status, 200, inv.text);
    const mail = await smtp.waitForMail(invited, { subject: /invited/i });
    const v = await call(srv, "POST", "/verify", {
      body: { type: "invite", email: invited, token: mail.code, password: "first-password-1" },
    });
    assert.equal(v.status, 200, v.text);
    assert.equal(
      (await passwordSignIn(srv, invited, { password: "first-password-1" })).length > 0,
      true,
    );

    // A sign-up by e-mail code (no password yet) confirmed with one.
    const signedUp = uniqueEmail("otp");
    await call(srv, "POST", "/otp", { body: { email: signedUp } });
    const confirm = await smtp.waitForMail(signedUp);
    const c = await call(srv, "POST", "/verify", {
      body: { type: "signup", email: signedUp, token: confirm.code, password: "first-password-2" },
    });
    assert.equal(c.status, 200, c.text);
    assert.equal(
      (await passwordSignIn(srv, signedUp, { password: "first-password-2" })).length > 0,
      true,
    );
  });
});

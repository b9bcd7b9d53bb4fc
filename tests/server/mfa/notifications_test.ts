import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { admin, MFA_ENV, signedUp, TestClock, totpAt } from "./_helpers.ts";

Deno.test("enrolled and unenrolled notification mails name the factor type, behind their switches", async () => {
  const smtp = await startSmtp();
  const clock = new TestClock();
  const srv = await startTestServer({
    ...MFA_ENV,
    ...smtp.env,
    AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_ENROLLED_ENABLED: "true",
    AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_UNENROLLED_ENABLED: "true",
  }, { clock });
  try {
    const { client, email, userId } = await signedUp(srv);
    const f = (await client.mfa.enroll({ factorType: "totp" })).data!;
    // Enrolling alone sends nothing: the factor counts once verified.
    await smtp.expectNoMail(email, 300);
    const v = await client.mfa.challengeAndVerify({
      factorId: f.id,
      code: totpAt(f.totp.secret, clock.ms),
    });
    assert.equal(v.error, null);
    const enrolled = await smtp.waitForMail(email, {
      subject: "A new MFA factor has been enrolled",
    });
    assert.match(enrolled.text, /A new factor \(totp\) has been enrolled for your account/);
    assert.ok(!enrolled.text.includes(f.totp.secret) && !enrolled.html.includes(f.totp.secret));
    // Verifying again (a later sign-in's step-up) is no new enrollment.
    clock.advance(30);
    await client.mfa.challengeAndVerify({ factorId: f.id, code: totpAt(f.totp.secret, clock.ms) });
    await smtp.expectNoMail(email, 300);

    assert.equal((await client.mfa.unenroll({ factorId: f.id })).error, null);
    const gone = await smtp.waitForMail(email, { subject: "An MFA factor has been unenrolled" });
    assert.match(gone.text, /A factor \(totp\) has been unenrolled from your account/);

    // An admin removing a verified factor tells the user too.
    clock.advance(30);
    const g = (await client.mfa.enroll({ factorType: "totp" })).data!;
    await client.mfa.challengeAndVerify({ factorId: g.id, code: totpAt(g.totp.secret, clock.ms) });
    await smtp.waitForMail(email, { subject: "A new MFA factor has been enrolled" });
    assert.equal((await (await admin(srv)).mfa.deleteFactor({ userId, id: g.id })).error, null);
    await smtp.waitForMail(email, { subject: "An MFA factor has been unenrolled" });
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("with the switches off (the default) no notification mail is sent", async () => {
  const smtp = await startSmtp();
  const clock = new TestClock();
  const srv = await startTestServer({ ...MFA_ENV, ...smtp.env }, { clock });
  try {
    const { client, email } = await signedUp(srv);
    const f = (await client.mfa.enroll({ factorType: "totp" })).data!;
    await client.mfa.challengeAndVerify({ factorId: f.id, code: totpAt(f.totp.secret, clock.ms) });
    assert.equal((await client.mfa.unenroll({ factorId: f.id })).error, null);
    await smtp.expectNoMail(email, 500);
  } finally {
    await srv.close();
    await smtp.close();
  }
});

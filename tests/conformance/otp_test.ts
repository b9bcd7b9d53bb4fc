/** Cases ported from supabase/auth internal/api/otp_test.go. */
import { assert, assertError, conformance, ported } from "./_helpers.ts";

const CHALLENGE = "testtesttesttesttesttesttestteststeststesttesttesttest";

conformance("otp_test.go", { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, [
  ported("TestOtpPKCE/Test (PKCE) Success Magiclink Otp", async (e) => {
    const r = await e.call("POST", "/otp", {
      email: e.email(),
      create_user: true,
      code_challenge_method: "s256",
      code_challenge: CHALLENGE,
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {});
  }),
  ported("TestOtpPKCE/Test (PKCE) Failure, no code challenge", async (e) => {
    const r = await e.call("POST", "/otp", {
      email: e.email(),
      create_user: true,
      code_challenge_method: "s256",
    });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "PKCE flow requires code_challenge_method and code_challenge");
  }),
  ported("TestOtpPKCE/Test (PKCE) Failure, no code challenge method", async (e) => {
    const r = await e.call("POST", "/otp", {
      email: e.email(),
      create_user: true,
      code_challenge: CHALLENGE,
    });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "PKCE flow requires code_challenge_method and code_challenge");
  }),
  ported("TestOtp/Test Success Magiclink Otp", async (e) => {
    const email = e.email();
    const r = await e.call("POST", "/otp", {
      email,
      create_user: true,
      data: { somedata: "metadata" },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {});
    await e.smtp.waitForMail(email);
  }),
  ported("TestOtp/Test Failure Pass Both Email & Phone", async (e) => {
    const r = await e.call("POST", "/otp", {
      email: e.email(),
      phone: "123456789",
      create_user: true,
    });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Only an email address or phone number should be provided");
  }),
  ported("TestNoSignupsForOtp", async (e) => {
    const email = e.email("newuser");
    const r = await e.call("POST", "/otp", { email, create_user: false });
    assert.deepEqual(r.body, {
      code: 422,
      error_code: "otp_disabled",
      msg: "Signups not allowed for otp",
    });
    assert.equal(r.status, 422);
    // nothing was sent: the next mail this address gets is the one asked for below
    await e.call("POST", "/otp", { email, create_user: true });
    const mail = await e.smtp.waitForMail(email);
    assert.match(mail.subject, /Confirm/);
    assert.equal(e.smtp.count(email), 1);
  }),
  ported("TestSubsequentOtp", async (e) => {
    const email = e.email("foo");
    assert.equal((await e.call("POST", "/otp", { email })).status, 200);
    const first = await e.smtp.waitForMail(email);
    assert.match(first.subject, /Confirm Your Signup/);
    // the sign-up is not complete: another request sends the confirmation again, no magic link
    assert.equal((await e.call("POST", "/otp", { email })).status, 200);
    const second = await e.smtp.waitForMail(email);
    assert.match(second.subject, /Confirm Your Signup/);
    const row = await e.srv.services.users.findByEmail(email);
    assert.equal(row!.email_confirmed_at, null);
    assert.equal(row!.recovery_sent_at, null);
  }),
]);

conformance("otp_test.go", { AUTHSVC_DISABLE_SIGNUP: "true" }, [
  ported("TestNoSignupsForOtp (sign-ups disabled, create_user false)", async (e) => {
    const email = e.email();
    const r = await e.call("POST", "/otp", { email, create_user: false });
    assertError(r, 422, "otp_disabled");
    const known = await e.user({ email: e.email() });
    const ok = await e.call("POST", "/otp", { email: known.email, create_user: false });
    assert.equal(ok.status, 200, ok.text);
    await e.smtp.waitForMail(known.email);
    assert.equal(e.smtp.count(email), 0);
  }),
  ported(
    "TestNoSignupsForOtp (sign-ups disabled, create_user true: signup_disabled)",
    async (e) => {
      const r = await e.call("POST", "/otp", { email: e.email(), create_user: true });
      assertError(r, 422, "signup_disabled");
      assert.equal(r.body.msg, "Signups not allowed for this instance");
    },
  ),
]);

conformance("otp_test.go", {}, [
  ported("TestOtp/Test Failure invalid channel param", async (e) => {
    const r = await e.call("POST", "/otp", {
      phone: "123456789",
      channel: "invalidchannel",
      create_user: true,
    });
    assertError(r, 400, "validation_failed");
    assert.match(r.body.msg, /Invalid channel, supported values are 'sms' or 'whatsapp'/);
  }),
  ported("TestOtpPKCE/Test (PKCE) Success, phone with valid params", async (e) => {
    const r = await e.call("POST", "/otp", {
      phone: e.phone(),
      create_user: true,
      code_challenge_method: "s256",
      code_challenge: CHALLENGE,
    });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.message_id);
  }),
  ported("TestNoSignupsForOtp (phone)", async (e) => {
    const r = await e.call("POST", "/otp", { phone: e.phone(), create_user: false });
    assertError(r, 422, "otp_disabled");
  }),
], { sms: true });

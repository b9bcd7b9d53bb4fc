/** Cases ported from supabase/auth internal/api/resend_test.go. */
import { assert, assertError, conformance, locationParams, pathOf, ported } from "./_helpers.ts";

conformance("resend_test.go", { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, [
  ported("TestResendValidation/Invalid type", async (e) => {
    const r = await e.call("POST", "/resend", { type: "invalid", email: e.email() });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Missing one of these types: signup, email_change, sms, phone_change");
  }),
  ported("TestResendValidation/Type & email mismatch", async (e) => {
    const r = await e.call("POST", "/resend", { type: "sms", email: e.email() });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Type provided requires a phone number");
  }),
  ported("TestResendValidation/Phone & email change type", async (e) => {
    const r = await e.call("POST", "/resend", { type: "email_change", phone: e.phone() });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestResendValidation/Email & phone number provided", async (e) => {
    const r = await e.call("POST", "/resend", {
      type: "email_change",
      phone: e.phone(),
      email: e.email(),
    });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Only an email address or phone number should be provided.");
  }),
  ported(
    "TestResendPKCEValidation/Signup with code_challenge but missing code_challenge_method",
    async (e) => {
      const r = await e.call("POST", "/resend", {
        type: "signup",
        email: e.email(),
        code_challenge: "a".repeat(43),
      });
      assertError(r, 400, "validation_failed");
      assert.equal(r.body.msg, "PKCE flow requires code_challenge_method and code_challenge");
    },
  ),
  ported(
    "TestResendPKCEValidation/Signup with code_challenge_method but missing code_challenge",
    async (e) => {
      const r = await e.call("POST", "/resend", {
        type: "signup",
        email: e.email(),
        code_challenge_method: "s256",
      });
      assertError(r, 400, "validation_failed");
      assert.equal(r.body.msg, "PKCE flow requires code_challenge_method and code_challenge");
    },
  ),
  ported(
    "TestResendPKCEValidation/Email change with code_challenge but missing code_challenge_method",
    async (e) => {
      const r = await e.call("POST", "/resend", {
        type: "email_change",
        email: e.email(),
        code_challenge: "a".repeat(43),
      });
      assertError(r, 400, "validation_failed");
      assert.equal(r.body.msg, "PKCE flow requires code_challenge_method and code_challenge");
    },
  ),
  ported("TestResendSuccess/Resend signup confirmation", async (e) => {
    const email = e.email();
    await e.call("POST", "/signup", { email, password: "password1" });
    const first = await e.smtp.waitForMail(email);
    const r = await e.call("POST", "/resend", { type: "signup", email });
    assert.equal(r.status, 200, r.text);
    const second = await e.smtp.waitForMail(email);
    assert.notEqual(second.link, first.link);
    assert.notEqual(second.code, "");
  }),
  ported("TestResendSuccess/Resend email change", async (e) => {
    const s = await e.session();
    const to = e.email("new");
    assert.equal((await e.call("PUT", "/user", { email: to }, s.access_token)).status, 200);
    const first = await e.smtp.waitForMail(to);
    const r = await e.call("POST", "/resend", { type: "email_change", email: s.user.email });
    assert.equal(r.status, 200, r.text);
    const second = await e.smtp.waitForMail(to);
    assert.notEqual(second.link, first.link);
  }),
  ported("TestResendPKCESuccess/Resend signup confirmation with PKCE", async (e) => {
    const email = e.email();
    await e.call("POST", "/signup", {
      email,
      password: "password1",
      code_challenge: "b".repeat(43),
      code_challenge_method: "s256",
    });
    await e.smtp.waitForMail(email);
    const r = await e.call("POST", "/resend", {
      type: "signup",
      email,
      code_challenge: "c".repeat(43),
      code_challenge_method: "s256",
    });
    assert.equal(r.status, 200, r.text);
    const mail = await e.smtp.waitForMail(email);
    assert.match(new URL(mail.link).searchParams.get("token")!, /^pkce_/);
    // the resent link continues a PKCE flow: it redirects with ?code=
    const v = await e.call("GET", pathOf(mail.link));
    assert.equal(v.status, 303, v.text);
    assert.ok(locationParams(v).query.get("code"), v.headers.get("location")!);
  }),
]);

conformance("resend_test.go", {
  AUTHSVC_MAILER_AUTOCONFIRM: "false",
  AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false",
}, [
  ported("TestResendPKCESuccess/Resend email change with PKCE", async (e) => {
    const s = await e.session();
    const to = e.email("new");
    assert.equal((await e.call("PUT", "/user", { email: to }, s.access_token)).status, 200);
    const first = await e.smtp.waitForMail(to);
    const r = await e.call("POST", "/resend", {
      type: "email_change",
      email: s.user.email,
      code_challenge: "t".repeat(54),
      code_challenge_method: "s256",
    });
    assert.equal(r.status, 200, r.text);
    const mail = await e.smtp.waitForMail(to);
    const token = new URL(mail.link).searchParams.get("token")!;
    assert.notEqual(token, new URL(first.link).searchParams.get("token"));
    assert.match(token, /^pkce_/);
    const v = await e.call("GET", pathOf(mail.link));
    assert.equal(v.status, 303, v.text);
    assert.ok(locationParams(v).query.get("code"), v.headers.get("location")!);
  }),
]);

conformance("resend_test.go", { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, [
  ported("TestResendSuccess/Resend email change for phone user", async (e) => {
    const phone = e.phone();
    await e.user({ phone });
    const s = await e.signIn({ phone });
    const to = e.email("new");
    assert.equal((await e.call("PUT", "/user", { email: to }, s.access_token)).status, 200);
    await e.smtp.waitForMail(to);
    const r = await e.call("POST", "/resend", { type: "email_change", phone });
    assert.equal(r.status, 200, r.text);
    await e.smtp.waitForMail(to);
  }),
  ported("TestResendSuccess/Resend phone change for email user", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    assert.equal((await e.call("PUT", "/user", { phone }, s.access_token)).status, 200);
    assert.ok(e.sms!.lastCode(phone));
    const before = e.sms!.messagesTo(phone).length;
    const r = await e.call("POST", "/resend", { type: "phone_change", email: s.user.email });
    assert.equal(r.status, 200, r.text);
    assert.equal(e.sms!.messagesTo(phone).length, before + 1);
  }),
], { sms: true });

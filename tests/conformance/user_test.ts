/** Cases ported from supabase/auth internal/api/user_test.go. */
import { assert, assertError, conformance, differs, type Env, ported } from "./_helpers.ts";

/** Asserts that `to` got no mail so far: the next one it gets is a recovery mail asked for now. */
async function noMailSoFar(e: Env, to: string) {
  assert.equal((await e.call("POST", "/recover", { email: to })).status, 200);
  const next = await e.smtp.waitForMail(to);
  assert.match(next.subject, /Reset Your Password/, `unexpected mail: ${next.subject}`);
}

async function emailChange(e: Env, fields: { email?: string; phone?: string }) {
  const u = await e.user(fields);
  const s = await e.signIn(fields.email ? { email: fields.email } : { phone: fields.phone });
  const to = e.email("new");
  const r = await e.call("PUT", "/user", { email: to }, s.access_token);
  assert.equal(r.status, 200, r.text);
  return { u, s, to, r };
}

const EMAIL_CASES = [
  ["User doesn't have an existing email", false],
  ["User doesn't have an existing email and double email confirmation required", true],
  ["User has an existing email", false],
  ["User has an existing email and double email confirmation required", true],
] as const;

for (const secure of [false, true]) {
  conformance("user_test.go", {
    AUTHSVC_MAILER_AUTOCONFIRM: "false",
    AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: String(secure),
  }, [
    ...EMAIL_CASES.filter(([, sec]) => sec === secure).map(([desc]) =>
      ported(`TestUserUpdateEmail/${desc}`, async (e) => {
        const hasEmail = desc.startsWith("User has");
        const { to, r, u } = await emailChange(
          e,
          hasEmail ? { email: e.email() } : { phone: e.phone() },
        );
        assert.equal(r.body.new_email, to);
        assert.notEqual(r.body.email, to);
        await e.smtp.waitForMail(to);
        if (secure && hasEmail) await e.smtp.waitForMail(u.email);
      })
    ),
  ], { sms: true });
}

conformance("user_test.go", {
  AUTHSVC_MAILER_AUTOCONFIRM: "true",
  AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "true",
}, [
  ported("TestUserUpdateEmail/Update email with mailer autoconfirm enabled", async (e) => {
    // a permanent user proves the new address even with autoconfirm
    const { to, r } = await emailChange(e, { email: e.email() });
    assert.equal(r.body.new_email, to);
    assert.notEqual(r.body.email, to);
    await e.smtp.waitForMail(to);
  }),
]);

conformance("user_test.go", { AUTHSVC_SMS_AUTOCONFIRM: "true" }, [
  ported("TestUserGet", async (e) => {
    const s = await e.session();
    const r = await e.call("GET", "/user", undefined, s.access_token);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, s.user.id);
  }),
  ported(
    "TestUserUpdatePhoneAutoconfirmEnabled/New phone number is the same as current phone number",
    async (e) => {
      const phone = e.phone();
      await e.user({ phone });
      const s = await e.signIn({ phone });
      const r = await e.call("PUT", "/user", { phone }, s.access_token);
      assert.equal(r.status, 200, r.text);
      assert.equal(`+${r.body.phone}`, phone);
    },
  ),
  ported("TestUserUpdatePhoneAutoconfirmEnabled/New phone number exists already", async (e) => {
    const taken = e.phone();
    await e.user({ phone: taken });
    const s = await e.session();
    const r = await e.call("PUT", "/user", { phone: taken }, s.access_token);
    assertError(r, 422, "phone_exists");
  }),
  ported(
    "TestUserUpdatePhoneAutoconfirmEnabled/New phone number is different from current phone number",
    async (e) => {
      const s = await e.session();
      const phone = e.phone();
      const r = await e.call("PUT", "/user", { phone }, s.access_token);
      assert.equal(r.status, 200, r.text);
      assert.equal(`+${r.body.phone}`, phone);
    },
  ),
  ported("TestUserUpdatePasswordNoReauthenticationRequired/Invalid password length", async (e) => {
    const s = await e.session();
    const r = await e.call("PUT", "/user", { password: "" }, s.access_token);
    assert.equal(r.status, 422, r.text);
    await e.signIn({ email: s.user.email });
  }),
  ported("TestUserUpdatePasswordNoReauthenticationRequired/Valid password length", async (e) => {
    const s = await e.session();
    const r = await e.call("PUT", "/user", { password: "newpassword" }, s.access_token);
    assert.equal(r.status, 200, r.text);
    await e.signIn({ email: s.user.email }, "newpassword");
  }),
  ported("TestUserUpdatePasswordLogoutOtherSessions", async (e) => {
    const s1 = await e.session();
    const s2 = await e.signIn({ email: s1.user.email });
    const r = await e.call("PUT", "/user", { password: "newpass" }, s1.access_token);
    assert.equal(r.status, 200, r.text);
    const ok = await e.call("POST", "/token?grant_type=refresh_token", {
      refresh_token: s1.refresh_token,
    });
    assert.equal(ok.status, 200, ok.text);
    const gone = await e.call("POST", "/token?grant_type=refresh_token", {
      refresh_token: s2.refresh_token,
    });
    assert.notEqual(gone.status, 200);
  }),
  ported(
    "TestUserUpdatePasswordSendsNotificationEmail/Password change notification disabled",
    async (e) => {
      const s = await e.session();
      const r = await e.call("PUT", "/user", { password: "differentpassword456" }, s.access_token);
      assert.equal(r.status, 200, r.text);
      await noMailSoFar(e, s.user.email);
    },
  ),
], { sms: true });

conformance("user_test.go", {
  AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: "true",
}, [
  ported(
    "TestUserUpdatePasswordSendsNotificationEmail/Password change notification enabled",
    async (e) => {
      const s = await e.session();
      const r = await e.call("PUT", "/user", { password: "newpassword123" }, s.access_token);
      assert.equal(r.status, 200, r.text);
      const mail = await e.smtp.waitForMail(s.user.email);
      assert.match(mail.subject, /Your password has been changed/);
    },
  ),
]);

conformance("user_test.go", {
  AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "true",
}, [
  ported(
    "TestUserUpdatePassword/Need reauthentication because outside of recently logged in window",
    async (e) => {
      const s = await e.session();
      e.clock.advance(25 * 3600);
      try {
        const r = await e.call("PUT", "/user", { password: "newpassword123" }, s.access_token);
        assertError(r, 400, "reauthentication_needed");
      } finally {
        e.clock.advance(-25 * 3600);
      }
    },
  ),
  ported("TestUserUpdatePassword/No nonce provided", async (e) => {
    const s = await e.session();
    const r = await e.call(
      "PUT",
      "/user",
      { password: "newpassword123", nonce: "" },
      s.access_token,
    );
    assertError(r, 400, "reauthentication_needed");
    assert.equal(r.body.msg, "Password update requires reauthentication");
  }),
  ported("TestUserUpdatePassword/Invalid nonce", async (e) => {
    const s = await e.session();
    const r = await e.call(
      "PUT",
      "/user",
      { password: "newpassword1234", nonce: "123456" },
      s.access_token,
    );
    assertError(r, 422, "reauthentication_not_valid");
    await e.signIn({ email: s.user.email });
  }),
  differs(
    "TestUserUpdatePassword/No need reauthentication because recently logged in",
    "a password change needs the nonce whenever SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION is on (docs/server/email.md); GoTrue waives it for sessions younger than 24 h",
    async (e) => {
      const s = await e.session();
      const r = await e.call("PUT", "/user", { password: "newpassword123" }, s.access_token);
      assertError(r, 400, "reauthentication_needed");
    },
  ),
  ported("TestUserUpdatePasswordReauthentication", async (e) => {
    const s = await e.session();
    const ra = await e.call("GET", "/reauthenticate", undefined, s.access_token);
    assert.equal(ra.status, 200, ra.text);
    const mail = await e.smtp.waitForMail(s.user.email);
    const r = await e.call(
      "PUT",
      "/user",
      { password: "newpass", nonce: mail.code },
      s.access_token,
    );
    assert.equal(r.status, 200, r.text);
    await e.signIn({ email: s.user.email }, "newpass");
    // the nonce is used up
    const again = await e.call(
      "PUT",
      "/user",
      { password: "newpass2", nonce: mail.code },
      s.access_token,
    );
    assertError(again, 422, "reauthentication_not_valid");
  }),
]);

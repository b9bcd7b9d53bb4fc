/** Cases ported from supabase/auth internal/api/user_test.go. */
import {
  assert,
  assertError,
  conformance,
  differs,
  type Env,
  type J,
  locationParams,
  PASSWORD,
  pathOf,
  pkcePair,
  ported,
} from "./_helpers.ts";

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
  AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
}, [
  ported("TestUserUpdateEmail/Update email with mailer autoconfirm enabled", async (e) => {
    // a permanent user proves the new address even with autoconfirm
    const { to, r } = await emailChange(e, { email: e.email() });
    assert.equal(r.body.new_email, to);
    assert.notEqual(r.body.email, to);
    await e.smtp.waitForMail(to);
  }),
  ported(
    "TestUserUpdateEmail/Update email with mailer autoconfirm enabled and anonymous user",
    async (e) => {
      // an anonymous user's new address is taken at once, as a sign-up would be
      const anon = await e.call("POST", "/signup", {});
      assert.equal(anon.status, 200, anon.text);
      const to = e.email("new");
      const r = await e.call("PUT", "/user", { email: to }, anon.body.access_token);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.email, to);
      assert.ok(!r.body.new_email, r.text);
      assert.equal(r.body.identities.length, 1);
      assert.equal(r.body.identities[0].provider, "email");
    },
  ),
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

/** Asserts that the password grant with `password` fails for `email`. */
async function refused(e: Env, email: string, password: string) {
  const r = await e.call("POST", "/token?grant_type=password", { email, password });
  assertError(r, 400, "invalid_credentials");
}

conformance("user_test.go", { AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD: "true" }, [
  ported(
    "TestUserUpdatePassword/Current password checked when require current password set",
    async (e) => {
      const s = await e.session();
      const r = await e.call("PUT", "/user", {
        password: "updateToNewpassword123",
        current_password: PASSWORD,
        nonce: "",
      }, s.access_token);
      assert.equal(r.status, 200, r.text);
      await e.signIn({ email: s.user.email }, "updateToNewpassword123");
    },
  ),
  ported(
    "TestUserUpdatePassword/Fails if current password incorrect when require current password set",
    async (e) => {
      const s = await e.session();
      const r = await e.call("PUT", "/user", {
        password: "newpassword123",
        current_password: "randompassword",
        nonce: "",
      }, s.access_token);
      assertError(r, 400, "current_password_invalid");
      assert.equal(r.body.msg, "Current password required when setting new password.");
      await refused(e, s.user.email, "newpassword123");
      await e.signIn({ email: s.user.email });
    },
  ),
  ported(
    "TestUserUpdatePassword/Fails if current password not set when required",
    async (e) => {
      const s = await e.session();
      for (
        const body of [{ password: "newpassword123", nonce: "" }, {
          password: "newpassword123",
          current_password: "",
        }]
      ) {
        const r = await e.call("PUT", "/user", body, s.access_token);
        assertError(r, 400, "current_password_required");
        assert.equal(r.body.msg, "Current password required when setting new password.");
      }
      await refused(e, s.user.email, "newpassword123");
    },
  ),
]);

/**
 * A session from a PKCE flow: `start` asks for the mail (with the challenge),
 * the mail's link is opened, the code exchanged.
 */
async function pkceSession(
  e: Env,
  to: string,
  start: (pkce: { code_challenge: string; code_challenge_method: string }) => Promise<void>,
): Promise<J> {
  const { verifier, challenge } = await pkcePair();
  await start({ code_challenge: challenge, code_challenge_method: "s256" });
  const mail = await e.smtp.waitForMail(to);
  const v = await e.call("GET", pathOf(mail.link));
  assert.equal(v.status, 303, v.text);
  const code = locationParams(v).query.get("code");
  assert.ok(code, v.headers.get("location")!);
  const t = await e.call("POST", "/token?grant_type=pkce", {
    auth_code: code,
    code_verifier: verifier,
  });
  assert.equal(t.status, 200, t.text);
  return t.body;
}

/** Sets a new password without current_password in `session`: the answer. */
function setPassword(e: Env, session: J, password: string) {
  return e.call("PUT", "/user", { password }, session.access_token);
}

conformance("user_test.go", {
  AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD: "true",
  AUTHSVC_MAILER_AUTOCONFIRM: "false",
  AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false",
}, [
  ported(
    "TestUserUpdatePasswordViaRecovery/Current password not required in OTP recovery flow",
    async (e) => {
      const { email } = await e.user({ email: e.email() });
      assert.equal((await e.call("POST", "/recover", { email })).status, 200);
      const mail = await e.smtp.waitForMail(email);
      const v = await e.call("POST", "/verify", { type: "recovery", email, token: mail.code });
      assert.equal(v.status, 200, v.text);
      const r = await setPassword(e, v.body, "newpassword123");
      assert.equal(r.status, 200, r.text);
      await e.signIn({ email }, "newpassword123");
    },
  ),
  ported(
    "TestUserUpdatePasswordViaRecovery/Current password not required in magiclink recovery flow",
    async (e) => {
      const { email } = await e.user({ email: e.email() });
      const session = await pkceSession(e, email, async (pkce) => {
        const r = await e.call("POST", "/otp", { email, ...pkce });
        assert.equal(r.status, 200, r.text);
      });
      const r = await setPassword(e, session, "newpassword456");
      assert.equal(r.status, 200, r.text);
      await e.signIn({ email }, "newpassword456");
    },
  ),
  ported(
    "TestUserUpdatePasswordViaRecovery/Current password not required in PKCE recovery flow",
    async (e) => {
      const { email } = await e.user({ email: e.email() });
      const session = await pkceSession(e, email, async (pkce) => {
        const r = await e.call("POST", "/recover", { email, ...pkce });
        assert.equal(r.status, 200, r.text);
      });
      const r = await setPassword(e, session, "newpassword789");
      assert.equal(r.status, 200, r.text);
      await e.signIn({ email }, "newpassword789");
    },
  ),
  ported(
    "TestUserUpdatePasswordViaRecovery/Current password required for any other claim",
    async (e) => {
      // a session from a confirmed e-mail change proves the new mailbox, not the person
      const s = await e.session();
      const to = e.email("new");
      const session = await pkceSession(e, to, async (pkce) => {
        const r = await e.call("PUT", "/user", { email: to, ...pkce }, s.access_token);
        assert.equal(r.status, 200, r.text);
      });
      assert.equal(session.user.email, to);
      const r = await setPassword(e, session, "newpassword456");
      assertError(r, 400, "current_password_required");
      await refused(e, to, "newpassword456");
      await e.signIn({ email: to });
    },
  ),
]);

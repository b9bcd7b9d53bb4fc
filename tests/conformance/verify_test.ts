/** Cases ported from supabase/auth internal/api/verify_test.go. */
import {
  assert,
  assertError,
  conformance,
  type Env,
  locationParams,
  pathOf,
  pkcePair,
  ported,
} from "./_helpers.ts";

const MSG_PARTIAL =
  "Confirmation link accepted. Please proceed to confirm link sent to the other email";

/** An admin-generated link for `email` (created unconfirmed when new). */
async function link(e: Env, type: string, email: string, extra: Record<string, unknown> = {}) {
  const r = await e.admin("POST", "/admin/generate_link", { type, email, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** A secure e-mail change requested by the user: the token hashes of both mails. */
async function secureChangeHashes(e: Env) {
  const s = await e.session();
  const to = e.email("new");
  assert.equal((await e.call("PUT", "/user", { email: to }, s.access_token)).status, 200);
  const hash = (link: string) => new URL(link).searchParams.get("token")!;
  const neu = hash((await e.smtp.waitForMail(to)).link);
  const cur = hash((await e.smtp.waitForMail(s.user.email)).link);
  return { cur, neu };
}

async function unconfirmed(e: Env) {
  return await e.user({ email: e.email(), email_confirm: false });
}

conformance("verify_test.go", { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, [
  ported("TestVerifyPasswordRecovery/Implict Flow Recovery", async (e) => {
    const u = await unconfirmed(e);
    assert.equal((await e.call("POST", "/recover", { email: u.email })).status, 200);
    const mail = await e.smtp.waitForMail(u.email);
    const v = await e.call("GET", pathOf(mail.link));
    assert.equal(v.status, 303);
    assert.equal(locationParams(v).hash.get("type"), "recovery");
    assert.ok((await e.srv.services.users.findByEmail(u.email))!.email_confirmed_at);
  }),
  ported("TestVerifyPasswordRecovery/PKCE Flow", async (e) => {
    const u = await unconfirmed(e);
    const r = await e.call("POST", "/recover", {
      email: u.email,
      code_challenge: "6b151854-cc15-4e29-8db7-3d3a9f15b3066b151854-cc15-4e29-8db7-3d3a9f15b306",
      code_challenge_method: "s256",
    });
    assert.equal(r.status, 200, r.text);
    const mail = await e.smtp.waitForMail(u.email);
    const v = await e.call("GET", pathOf(mail.link));
    assert.equal(v.status, 303);
    assert.ok(locationParams(v).query.get("code"));
    assert.ok((await e.srv.services.users.findByEmail(u.email))!.email_confirmed_at);
  }),
  ported("TestExpiredConfirmationToken", async (e) => {
    const email = e.email();
    await e.call("POST", "/signup", { email, password: "password1" });
    const mail = await e.smtp.waitForMail(email);
    e.clock.advance(48 * 3600);
    try {
      const v = await e.call("GET", pathOf(mail.link));
      assert.equal(v.status, 303);
      const f = locationParams(v).hash;
      assert.equal(f.get("error_code"), "otp_expired");
      assert.equal(f.get("error_description"), "Email link is invalid or has expired");
      assert.equal(f.get("error"), "access_denied");
    } finally {
      e.clock.advance(-48 * 3600);
    }
  }),
  ported("TestInvalidOtp/Invalid Email OTP", async (e) => {
    const email = e.email();
    await e.call("POST", "/signup", { email, password: "password1" });
    await e.smtp.waitForMail(email);
    const r = await e.call("POST", "/verify", { type: "signup", token: "invalid_otp", email });
    assert.equal(r.body.code, 403);
    assert.equal(r.body.msg, "Token has expired or is invalid");
  }),
  ported("TestInvalidOtp/Invalid Email Change", async (e) => {
    const s = await e.session();
    const to = e.email("new");
    await e.call("PUT", "/user", { email: to }, s.access_token);
    await e.smtp.waitForMail(to);
    const r = await e.call("POST", "/verify", {
      type: "email_change",
      token: "invalid_otp",
      email: s.user.email,
    });
    assert.equal(r.body.code, 403);
    assert.equal(r.body.msg, "Token has expired or is invalid");
  }),
  ported("TestExpiredRecoveryToken", async (e) => {
    const u = await e.user();
    await e.call("POST", "/recover", { email: u.email });
    const mail = await e.smtp.waitForMail(u.email);
    const token = new URL(mail.link).searchParams.get("token");
    const v = await e.call("GET", `/verify?type=signup&token=${token}`);
    assert.equal(v.status, 303, v.text);
  }),
  ported("TestVerifyPKCEOTP/Verify user on signup", async (e) => {
    const email = e.email();
    const { challenge } = await pkcePair();
    await e.call("POST", "/signup", {
      email,
      password: "password1",
      code_challenge: challenge,
      code_challenge_method: "s256",
    });
    const mail = await e.smtp.waitForMail(email);
    const v = await e.call("GET", pathOf(mail.link));
    assert.equal(v.status, 303);
    assert.ok(locationParams(v).query.get("code"));
    assert.ok((await e.srv.services.users.findByEmail(email))!.email_confirmed_at);
  }),
  ported("TestVerifyPKCEOTP/Verify magiclink", async (e) => {
    const u = await e.user();
    const { challenge } = await pkcePair();
    await e.call("POST", "/magiclink", {
      email: u.email,
      code_challenge: challenge,
      code_challenge_method: "s256",
    });
    const mail = await e.smtp.waitForMail(u.email);
    const v = await e.call("GET", pathOf(mail.link));
    assert.equal(v.status, 303);
    assert.ok(locationParams(v).query.get("code"));
  }),
  ...(["signup", "invite", "recovery", "magiclink", "email_change"] as const).map((type) =>
    ported(
      `TestVerifyBannedUser/Verify banned user on ${
        type === "recovery" ? "recover" : type === "email_change" ? "email change" : type
      }`,
      async (e) => {
        let email = e.email();
        let body: Record<string, unknown>;
        if (type === "signup") body = await link(e, "signup", email, { password: "password1" });
        else if (type === "invite") body = await link(e, "invite", email);
        else if (type === "email_change") {
          await e.user({ email });
          body = await link(e, "email_change_new", email, { new_email: e.email("new") });
        } else {
          await e.user({ email });
          body = await link(e, type, email);
        }
        const u = await e.srv.services.users.findByEmail(email);
        email = "";
        const ban = await e.admin("PUT", `/admin/users/${u!.id}`, { ban_duration: "24h" });
        assert.equal(ban.status, 200, ban.text);
        const v = await e.call("GET", pathOf(body.action_link as string));
        assert.equal(v.status, 303, v.text);
        assert.equal(locationParams(v).hash.get("error_code"), "user_banned");
      },
    )
  ),
  ported("TestVerifyValidOtp/Valid Confirmation OTP", async (e) => {
    const email = e.email();
    await e.call("POST", "/signup", { email, password: "password1" });
    const mail = await e.smtp.waitForMail(email);
    const r = await e.call("POST", "/verify", { type: "signup", token: mail.code, email });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidOtp/Valid Signup Token Hash", async (e) => {
    const email = e.email();
    const l = await link(e, "signup", email, { password: "password1" });
    const r = await e.call("POST", "/verify", { type: "signup", token_hash: l.hashed_token });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidOtp/Valid Recovery OTP", async (e) => {
    const u = await e.user();
    await e.call("POST", "/recover", { email: u.email });
    const mail = await e.smtp.waitForMail(u.email);
    const r = await e.call("POST", "/verify", {
      type: "recovery",
      token: mail.code,
      email: u.email,
    });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidOtp/Valid Email OTP", async (e) => {
    const u = await e.user();
    await e.call("POST", "/otp", { email: u.email });
    const mail = await e.smtp.waitForMail(u.email);
    const r = await e.call("POST", "/verify", { type: "email", token: mail.code, email: u.email });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidOtp/Valid Email OTP (email casing shouldn't matter)", async (e) => {
    const u = await e.user();
    await e.call("POST", "/otp", { email: u.email });
    const mail = await e.smtp.waitForMail(u.email);
    const r = await e.call("POST", "/verify", {
      type: "email",
      token: mail.code,
      email: String(u.email).toUpperCase(),
    });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidOtp/Valid Email Verification Type", async (e) => {
    const u = await e.user();
    const l = await link(e, "magiclink", u.email);
    const r = await e.call("POST", "/verify", { type: "email", token_hash: l.hashed_token });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidateParams/Successful GET Verify", async (e) => {
    const v = await e.call("GET", "/verify?type=signup&token=some-token-hash");
    assert.equal(v.status, 303);
    assert.equal(locationParams(v).hash.get("error_code"), "otp_expired");
  }),
  ported("TestVerifyValidateParams/Successful POST Verify (TokenHash)", async (e) => {
    const r = await e.call("POST", "/verify", { type: "signup", token_hash: "some-token-hash" });
    assertError(r, 403, "otp_expired");
  }),
  ported("TestVerifyValidateParams/Successful POST Verify (Token)", async (e) => {
    const r = await e.call("POST", "/verify", {
      type: "signup",
      token: "some-token",
      email: "email@example.com",
    });
    assertError(r, 403, "otp_expired");
  }),
  ported("TestVerifyValidateParams/Need to send email or phone number with token", async (e) => {
    const r = await e.call("POST", "/verify", { type: "signup", token: "some-token" });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Only an email address or phone number should be provided on verify");
  }),
  ported("TestVerifyValidateParams/Cannot send both TokenHash and Token", async (e) => {
    const r = await e.call("POST", "/verify", {
      type: "signup",
      token: "some-token",
      token_hash: "some-token-hash",
    });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Verify requires either a token or a token hash");
  }),
  ported("TestVerifyValidateParams/No verification type specified", async (e) => {
    const r = await e.call("POST", "/verify", { token: "some-token", email: "email@example.com" });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Verify requires a verification type");
  }),
  ported("TestPrepErrorRedirectURL/(Implicit): plain redirect url", async (e) => {
    const v = await e.call(
      "GET",
      "/verify?type=signup&token=unknown&redirect_to=http://localhost:3000/",
    );
    const { url, hash } = locationParams(v);
    assert.equal(url.origin + url.pathname + url.search, "http://localhost:3000/");
    assert.equal(hash.get("error"), "access_denied");
    assert.ok(hash.get("error_code"));
  }),
  ported("TestPrepErrorRedirectURL/(Implicit): query params preserved", async (e) => {
    const to = encodeURIComponent("http://localhost:3000/?test=param");
    const v = await e.call("GET", `/verify?type=signup&token=unknown&redirect_to=${to}`);
    const { query, hash } = locationParams(v);
    assert.equal(query.get("test"), "param");
    assert.ok(hash.get("error_code"));
  }),
]);

conformance("verify_test.go", {
  AUTHSVC_MAILER_AUTOCONFIRM: "false",
  AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "true",
}, [
  ported("TestVerifySecureEmailChange/Implict Flow Email Change", async (e) => {
    const s = await e.session();
    const to = e.email("new");
    assert.equal((await e.call("PUT", "/user", { email: to }, s.access_token)).status, 200);
    const toNew = await e.smtp.waitForMail(to);
    const toOld = await e.smtp.waitForMail(s.user.email);
    const first = await e.call("GET", pathOf(toOld.link));
    assert.equal(first.status, 303);
    assert.equal(locationParams(first).hash.get("message"), MSG_PARTIAL);
    const second = await e.call("GET", pathOf(toNew.link));
    assert.equal(second.status, 303);
    assert.ok(locationParams(second).hash.get("access_token"));
    const row = await e.srv.services.users.findById(s.user.id);
    assert.equal(row!.email, to);
    assert.equal(row!.email_change, null);
  }),
  ported("TestVerifySecureEmailChange/PKCE Email Change", async (e) => {
    const s = await e.session();
    const to = e.email("new");
    const { challenge } = await pkcePair();
    const r = await e.call("PUT", "/user", {
      email: to,
      code_challenge: challenge,
      code_challenge_method: "s256",
    }, s.access_token);
    assert.equal(r.status, 200, r.text);
    const toNew = await e.smtp.waitForMail(to);
    const toOld = await e.smtp.waitForMail(s.user.email);
    assert.equal((await e.call("GET", pathOf(toOld.link))).status, 303);
    const second = await e.call("GET", pathOf(toNew.link));
    assert.equal(second.status, 303);
    assert.ok(locationParams(second).query.get("code"), second.headers.get("location")!);
  }),
  ported("TestVerifyValidOtp/Valid Email Change OTP", async (e) => {
    const s = await e.session();
    const to = e.email("new");
    await e.call("PUT", "/user", { email: to }, s.access_token);
    const mail = await e.smtp.waitForMail(to);
    await e.smtp.waitForMail(s.user.email);
    const r = await e.call("POST", "/verify", {
      type: "email_change",
      token: mail.code,
      email: to,
    });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidOtp/Valid Email Change Token Hash", async (e) => {
    const u = await e.user();
    const l = await link(e, "email_change_new", u.email, { new_email: e.email("new") });
    const r = await e.call("POST", "/verify", { type: "email_change", token_hash: l.hashed_token });
    assert.equal(r.status, 200, r.text);
  }),
  ported(
    "TestSecureEmailChangeWithTokenHash/Secure Email Change with Token Hash (Success)",
    async (e) => {
      const { cur, neu } = await secureChangeHashes(e);
      const a = await e.call("POST", "/verify", { type: "email_change", token_hash: cur });
      assert.equal(a.status, 200, a.text);
      assert.equal(a.body.msg, MSG_PARTIAL);
      const b = await e.call("POST", "/verify", { type: "email_change", token_hash: neu });
      assert.equal(b.status, 200, b.text);
      assert.ok(b.body.access_token);
    },
  ),
  ported(
    "TestSecureEmailChangeWithTokenHash/Secure Email Change with Token Hash. Reusing a token hash twice should fail",
    async (e) => {
      const { cur } = await secureChangeHashes(e);
      const a = await e.call("POST", "/verify", { type: "email_change", token_hash: cur });
      assert.equal(a.status, 200, a.text);
      const b = await e.call("POST", "/verify", { type: "email_change", token_hash: cur });
      assert.equal(b.status, 403, b.text);
    },
  ),
  ported("TestPrepRedirectURL/(Implicit): plain redirect url", async (e) => {
    const s = await e.session();
    await e.call(
      "PUT",
      "/user?redirect_to=http://localhost:3000/",
      { email: e.email("new") },
      s.access_token,
    );
    const toOld = await e.smtp.waitForMail(s.user.email);
    const v = await e.call("GET", pathOf(toOld.link));
    const { url, hash } = locationParams(v);
    assert.equal(url.origin + url.pathname + url.search, "http://localhost:3000/");
    assert.equal(hash.get("message"), MSG_PARTIAL);
  }),
  ported("TestPrepRedirectURL/(Implicit): query params retained", async (e) => {
    const s = await e.session();
    const to = encodeURIComponent("http://localhost:3000/?first=another");
    await e.call("PUT", `/user?redirect_to=${to}`, { email: e.email("new") }, s.access_token);
    const toOld = await e.smtp.waitForMail(s.user.email);
    const v = await e.call("GET", pathOf(toOld.link));
    const { query, hash } = locationParams(v);
    assert.equal(query.get("first"), "another");
    assert.equal(hash.get("message"), MSG_PARTIAL);
  }),
]);

conformance("verify_test.go", {
  AUTHSVC_SITE_URL: "https://example.netlify.com",
  AUTHSVC_URI_ALLOW_LIST: "https://supabase.com/,http://localhost:3000",
}, [
  ported("TestVerifyPermitedCustomUri", async (e) => {
    const u = await unconfirmed(e);
    await e.call("POST", "/recover", { email: u.email });
    const mail = await e.smtp.waitForMail(u.email);
    const token = new URL(mail.link).searchParams.get("token");
    const v = await e.call(
      "GET",
      `/verify?type=recovery&token=${token}&redirect_to=https://supabase.com/`,
    );
    assert.equal(v.status, 303);
    assert.equal(locationParams(v).url.hostname, "supabase.com");
    assert.ok((await e.srv.services.users.findByEmail(u.email))!.email_confirmed_at);
  }),
  ported("TestVerifyNotPermitedCustomUri", async (e) => {
    const u = await unconfirmed(e);
    await e.call("POST", "/recover", { email: u.email });
    const mail = await e.smtp.waitForMail(u.email);
    const token = new URL(mail.link).searchParams.get("token");
    const v = await e.call(
      "GET",
      `/verify?type=recovery&token=${token}&redirect_to=http://custom-url.com`,
    );
    assert.equal(v.status, 303);
    assert.equal(locationParams(v).url.hostname, "example.netlify.com");
    assert.ok((await e.srv.services.users.findByEmail(u.email))!.email_confirmed_at);
  }),
]);

conformance("verify_test.go", {}, [
  ported("TestInvalidOtp/Expired SMS OTP", async (e) => {
    const phone = e.phone();
    await e.call("POST", "/signup", { phone, password: "password1" });
    const code = e.sms!.lastCode(phone);
    e.clock.advance(48 * 3600);
    try {
      const r = await e.call("POST", "/verify", { type: "sms", token: code, phone });
      assert.equal(r.body.code, 403);
      assert.equal(r.body.msg, "Token has expired or is invalid");
    } finally {
      e.clock.advance(-48 * 3600);
    }
  }),
  ported("TestInvalidOtp/Invalid SMS OTP", async (e) => {
    const phone = e.phone();
    await e.call("POST", "/signup", { phone, password: "password1" });
    const r = await e.call("POST", "/verify", { type: "sms", token: "invalid_otp", phone });
    assert.equal(r.body.code, 403);
    assert.equal(r.body.msg, "Token has expired or is invalid");
  }),
  ported("TestInvalidOtp/Invalid Phone Change OTP", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    await e.call("PUT", "/user", { phone }, s.access_token);
    const r = await e.call("POST", "/verify", {
      type: "phone_change",
      token: "invalid_otp",
      phone,
    });
    assert.equal(r.body.code, 403);
    assert.equal(r.body.msg, "Token has expired or is invalid");
  }),
  ported("TestVerifyValidOtp/Valid SMS OTP", async (e) => {
    const phone = e.phone();
    await e.call("POST", "/signup", { phone, password: "password1" });
    const r = await e.call("POST", "/verify", {
      type: "sms",
      token: e.sms!.lastCode(phone),
      phone,
    });
    assert.equal(r.status, 200, r.text);
  }),
  ported("TestVerifyValidOtp/Valid Phone Change OTP", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    await e.call("PUT", "/user", { phone }, s.access_token);
    const r = await e.call("POST", "/verify", {
      type: "phone_change",
      token: e.sms!.lastCode(phone),
      phone,
    });
    assert.equal(r.status, 200, r.text);
  }),
], { sms: true });

/** TestVerifySignupWithRedirectURLContainedPath: one server per SITE_URL / URI_ALLOW_LIST. */
const REDIRECTS: [string, string, string, string, string][] = [
  [
    "same site url and redirect url with path",
    "http://localhost:3000/#/",
    "http://localhost:3000",
    "http://localhost:3000/#/",
    "http://localhost:3000/#/",
  ],
  [
    "different site url and redirect url in allow list",
    "https://someapp-something.codemagic.app/#/",
    "http://localhost:3000",
    "http://localhost:3000",
    "http://localhost:3000",
  ],
  [
    "different site url and redirect url not in allow list",
    "https://someapp-something.codemagic.app/#/",
    "http://localhost:3000",
    "http://localhost:3000/docs",
    "https://someapp-something.codemagic.app/#/",
  ],
  [
    "same wildcard site url and redirect url in allow list",
    "http://sub.test.dev:3000/#/",
    "http://*.test.dev:3000",
    "http://sub.test.dev:3000/#/",
    "http://sub.test.dev:3000/#/",
  ],
  [
    "different wildcard site url and redirect url in allow list",
    "http://sub.test.dev/#/",
    "http://*.other.dev:3000",
    "http://sub.other.dev:3000",
    "http://sub.other.dev:3000",
  ],
  [
    "different wildcard site url and redirect url not in allow list",
    "http://test.dev:3000/#/",
    "http://*.allowed.dev:3000",
    "http://sub.test.dev:3000/#/",
    "http://test.dev:3000/#/",
  ],
  [
    "exact mobile deep link redirect url in allow list",
    "http://test.dev:3000/#/",
    "twitter://timeline",
    "twitter://timeline",
    "twitter://timeline",
  ],
  [
    "wildcard mobile deep link redirect url in allow list",
    "http://test.dev:3000/#/",
    "com.example.app://**",
    "com.example.app://sign-in/v2",
    "com.example.app://sign-in/v2",
  ],
  [
    "redirect respects . separator",
    "http://localhost:3000",
    "http://*.*.dev:3000",
    "http://foo.bar.dev:3000",
    "http://foo.bar.dev:3000",
  ],
  [
    "redirect does not respect . separator",
    "http://localhost:3000",
    "http://*.dev:3000",
    "http://foo.bar.dev:3000",
    "http://localhost:3000",
  ],
  [
    "redirect respects / separator in url subdirectory",
    "http://localhost:3000",
    "http://test.dev:3000/*/*",
    "http://test.dev:3000/bar/foo",
    "http://test.dev:3000/bar/foo",
  ],
  [
    "redirect does not respect / separator in url subdirectory",
    "http://localhost:3000",
    "http://test.dev:3000/*",
    "http://test.dev:3000/bar/foo",
    "http://localhost:3000",
  ],
  [
    "redirect ignores fragment for validation",
    "http://localhost:3000",
    "http://*.example.com/*",
    "http://something#.example.com/abc",
    "http://localhost:3000",
  ],
  [
    "redirect ignores unusual hostnames",
    "http://localhost:3000",
    "http://*.example.com/*",
    "http://japanese。.example.com/abc",
    "http://localhost:3000",
  ],
  [
    "redirect with allowed deep-link url correctly without a hostname",
    "http://localhost:3000",
    "com.myapp://**",
    "com.myapp://",
    "com.myapp:",
  ],
];

for (const [desc, site, allow, asked, expected] of REDIRECTS) {
  conformance("verify_test.go", { AUTHSVC_SITE_URL: site, AUTHSVC_URI_ALLOW_LIST: allow }, [
    ported(`TestVerifySignupWithRedirectURLContainedPath/${desc}`, async (e) => {
      const email = e.email();
      const l = await link(e, "signup", email, { password: "password1" });
      const token = new URL(l.action_link).searchParams.get("token");
      const v = await e.call(
        "GET",
        `/verify?type=signup&token=${token}&redirect_to=${encodeURIComponent(asked)}`,
      );
      assert.equal(v.status, 303, v.text);
      const loc = v.headers.get("location")!;
      assert.ok(
        loc.startsWith(expected) || loc.includes(expected),
        `${loc} should contain ${expected}`,
      );
      const row = await e.srv.services.users.findByEmail(email);
      assert.ok(row!.email_confirmed_at);
      const me = await e.admin("GET", `/admin/users/${row!.id}`);
      assert.equal(me.body.user_metadata.email_verified, true, me.text);
      assert.equal(me.body.identities[0].identity_data.email_verified, true);
    }),
  ]);
}

/** Asserts that the next mail `to` gets (of those not yet looked at) is one asked for now. */
async function nextMailIsInvite(e: Env, to: string) {
  assert.equal((await e.admin("POST", "/invite", { email: to })).status, 200);
  const next = await e.smtp.waitForMail(to);
  assert.match(next.subject, /invited/i, `unexpected mail: ${next.subject}`);
}

/** Asserts that `user` gets no mail before one asked for now (a recovery mail). */
async function nextMailIsRecovery(e: Env, to: string) {
  assert.equal((await e.call("POST", "/recover", { email: to })).status, 200);
  const next = await e.smtp.waitForMail(to);
  assert.match(next.subject, /Reset Your Password/, `unexpected mail: ${next.subject}`);
}

for (const enabled of [true, false]) {
  conformance("verify_test.go", {
    AUTHSVC_MAILER_AUTOCONFIRM: "false",
    AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "true",
    AUTHSVC_MAILER_NOTIFICATIONS_EMAIL_CHANGED_ENABLED: String(enabled),
  }, [
    ported(
      `TestVeryEmailChangeSendsNotificationEmail/Email change notification ${
        enabled ? "enabled" : "disabled"
      }`,
      async (e) => {
        const s = await e.session();
        const old = s.user.email as string;
        const to = e.email("new");
        assert.equal((await e.call("PUT", "/user", { email: to }, s.access_token)).status, 200);
        const toNew = await e.smtp.waitForMail(to);
        const toOld = await e.smtp.waitForMail(old);
        const first = await e.call("GET", pathOf(toNew.link));
        assert.equal(locationParams(first).hash.get("message"), MSG_PARTIAL);
        const second = await e.call("GET", pathOf(toOld.link));
        assert.equal(second.status, 303, second.text);
        assert.ok(locationParams(second).hash.get("access_token"));
        const row = await e.srv.services.users.findById(s.user.id);
        assert.equal(row!.email, to);
        if (enabled) {
          const note = await e.smtp.waitForMail(old);
          assert.match(note.subject, /Your email address has been changed/);
          assert.ok(note.text.includes(old), note.text);
        } else {
          await nextMailIsInvite(e, old);
        }
      },
    ),
  ]);
}

/** A user with an e-mail (and `phone` when given) changes their phone and verifies the code. */
async function phoneChange(e: Env, phone?: string) {
  const email = e.email();
  await e.user(phone ? { email, phone } : { email });
  const s = await e.signIn({ email });
  const to = e.phone();
  const r = await e.call("PUT", "/user", { phone: to }, s.access_token);
  assert.equal(r.status, 200, r.text);
  const v = await e.call("POST", "/verify", {
    type: "phone_change",
    phone: to,
    token: e.sms!.lastCode(to),
  });
  assert.equal(v.status, 200, v.text);
  assert.equal(`+${v.body.user.phone}`, to);
  return { email, to };
}

conformance("verify_test.go", { AUTHSVC_MAILER_NOTIFICATIONS_PHONE_CHANGED_ENABLED: "true" }, [
  ported("TestVerifyPhoneChangeSendsNotificationEmailEnabled", async (e) => {
    const old = e.phone();
    const { email } = await phoneChange(e, old);
    const note = await e.smtp.waitForMail(email);
    assert.match(note.subject, /Your phone number has been changed/);
    assert.ok(note.text.includes(old.slice(1)), note.text);
  }),
  ported("TestVerifyPhoneChangeSendsNotificationEmailEnabled_NoChange", async (e) => {
    // a first phone number is no change of one: no notification
    const { email } = await phoneChange(e);
    await nextMailIsRecovery(e, email);
  }),
], { sms: true });

conformance("verify_test.go", { AUTHSVC_MAILER_NOTIFICATIONS_PHONE_CHANGED_ENABLED: "false" }, [
  ported("TestVerifyPhoneChangeSendsNotificationEmailDisabled", async (e) => {
    const { email } = await phoneChange(e, e.phone());
    await nextMailIsRecovery(e, email);
  }),
], { sms: true });

conformance("verify_test.go", {
  AUTHSVC_MAILER_AUTOCONFIRM: "false",
  AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "true",
}, [
  ...[
    ["Redirect URL with additional query params", "?first=another&second=other"],
    ["Query params in redirect url are overriden", "?message=Valid+redirect+URL"],
  ].map(([desc, query]) =>
    ported(`TestPrepRedirectURL/(PKCE): ${desc}`, async (e) => {
      // the first of the two links of a secure e-mail change, in the PKCE flow
      const s = await e.session();
      const { challenge } = await pkcePair();
      const to = encodeURIComponent(`http://localhost:3000/${query}`);
      const r = await e.call("PUT", `/user?redirect_to=${to}`, {
        email: e.email("new"),
        code_challenge: challenge,
        code_challenge_method: "s256",
      }, s.access_token);
      assert.equal(r.status, 200, r.text);
      const toOld = await e.smtp.waitForMail(s.user.email);
      const v = await e.call("GET", pathOf(toOld.link));
      const { url, query: q, hash } = locationParams(v);
      assert.equal(url.origin + url.pathname, "http://localhost:3000/");
      assert.deepEqual(q.getAll("message"), [MSG_PARTIAL]);
      if (query.includes("first")) {
        assert.equal(q.get("first"), "another");
        assert.equal(q.get("second"), "other");
      }
      assert.equal(hash.get("message"), MSG_PARTIAL);
    })
  ),
  ...[
    ["Error in both query params and hash fragment", ""],
    ["Error with conflicting query params in redirect url", "?error=Error+to+be+overriden"],
  ].map(([desc, query]) =>
    ported(`TestPrepErrorRedirectURL/(PKCE): ${desc}`, async (e) => {
      // a PKCE link (pkce_ token) that is not valid: the error in the query and the fragment
      const to = encodeURIComponent(`http://localhost:3000/${query}`);
      const v = await e.call(
        "GET",
        `/verify?type=signup&token=pkce_${"0".repeat(56)}&redirect_to=${to}`,
      );
      const { url, query: q, hash } = locationParams(v);
      assert.equal(url.origin + url.pathname, "http://localhost:3000/");
      for (const p of [q, hash]) {
        assert.deepEqual(p.getAll("error"), ["access_denied"], url.href);
        assert.ok(p.get("error_code"), url.href);
        assert.ok(p.get("error_description"), url.href);
      }
    })
  ),
]);

/** Cases ported from supabase/auth internal/api/anonymous_test.go. */
import { assert, assertError, conformance, type Env, ported } from "./_helpers.ts";

const ON = {
  AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  AUTHSVC_MAILER_AUTOCONFIRM: "false",
};

async function anonymous(e: Env) {
  const r = await e.call("POST", "/signup", {});
  assert.equal(r.status, 200, r.text);
  return r.body;
}

async function convert(e: Env, body: Record<string, unknown>, kind: "email" | "phone") {
  const anon = await anonymous(e);
  const up = await e.call("PUT", "/user", body, anon.access_token);
  assert.equal(up.status, 200, up.text);
  // still anonymous until the new address is verified
  let row = await e.srv.services.users.findById(anon.user.id);
  assert.equal(row!.is_anonymous, true);
  if (body.password) assert.ok(row!.encrypted_password);
  const v = kind === "email"
    ? await e.call("POST", "/verify", {
      type: "email_change",
      token_hash: new URL((await e.smtp.waitForMail(String(body.email))).link).searchParams.get(
        "token",
      ),
    })
    : await e.call("POST", "/verify", {
      type: "phone_change",
      phone: body.phone,
      token: e.sms!.lastCode(String(body.phone)),
    });
  assert.equal(v.status, 200, v.text);
  const u = v.body.user;
  assert.equal(u.id, anon.user.id);
  assert.equal(u.aud, "authenticated");
  assert.equal(u.is_anonymous, false);
  assert.equal(u.identities.length, 1);
  if (kind === "email") {
    assert.equal(u.email, body.email);
    assert.ok(u.email_confirmed_at);
  } else {
    assert.equal(`+${u.phone}`, body.phone);
    assert.ok(u.phone_confirmed_at);
  }
  assert.deepEqual(u.app_metadata, { provider: kind, providers: [kind] });
  row = await e.srv.services.users.findById(anon.user.id);
  assert.equal(row!.is_anonymous, false);
  if (body.password) {
    const login = kind === "email" ? { email: String(body.email) } : { phone: String(body.phone) };
    await e.signIn(login, String(body.password));
  }
}

conformance("anonymous_test.go", ON, [
  ported("TestAnonymousLogins", async (e) => {
    const r = await e.call("POST", "/signup", { data: { field: "foo" } });
    assert.equal(r.status, 200, r.text);
    const u = r.body.user;
    assert.ok(u.id);
    assert.equal(u.aud, "authenticated");
    assert.ok(!u.email);
    assert.ok(!u.phone);
    assert.equal(u.is_anonymous, true);
    assert.deepEqual(u.user_metadata, { field: "foo" });
  }),
  ported(
    "TestConvertAnonymousUserToPermanent/convert anonymous user to permanent user with email",
    (e) => convert(e, { email: e.email() }, "email"),
  ),
  ported(
    "TestConvertAnonymousUserToPermanent/convert anonymous user to permanent user with phone",
    (e) => convert(e, { phone: e.phone() }, "phone"),
  ),
  ported(
    "TestConvertAnonymousUserToPermanent/convert anonymous user to permanent user with email & password",
    (e) => convert(e, { email: e.email(), password: "test-password" }, "email"),
  ),
  ported(
    "TestConvertAnonymousUserToPermanent/convert anonymous user to permanent user with phone & password",
    (e) => convert(e, { phone: e.phone(), password: "test-password" }, "phone"),
  ),
  ported(
    "TestAdminUpdateAnonymousUser/update anonymous user with email and email confirm true",
    async (e) => {
      const anon = await anonymous(e);
      const email = e.email();
      const r = await e.admin("PUT", `/admin/users/${anon.user.id}`, {
        email,
        email_confirm: true,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.identities.length, 1);
      assert.equal(r.body.email, email);
      assert.equal(r.body.is_anonymous, false);
    },
  ),
  ported(
    "TestAdminUpdateAnonymousUser/update anonymous user with email and email confirm false",
    async (e) => {
      const anon = await anonymous(e);
      const email = e.email();
      const r = await e.admin("PUT", `/admin/users/${anon.user.id}`, {
        email,
        email_confirm: false,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.identities.length, 1);
      assert.equal(r.body.email, email);
      assert.equal(r.body.is_anonymous, true);
    },
  ),
  ported(
    "TestConvertAnonymousUserToPermanent (password without an address is refused)",
    async (e) => {
      const anon = await anonymous(e);
      const r = await e.call("PUT", "/user", { password: "test-password" }, anon.access_token);
      assertError(r, 422, "validation_failed");
      assert.equal(
        r.body.msg,
        "Updating password of an anonymous user without an email or phone is not allowed",
      );
    },
  ),
], { sms: true });

conformance("anonymous_test.go", {
  AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  AUTHSVC_MAILER_AUTOCONFIRM: "true",
}, [
  ported(
    "TestUserUpdateEmail/Update email with mailer autoconfirm enabled and anonymous user (user_test.go)",
    async (e) => {
      const anon = await anonymous(e);
      const email = e.email();
      const r = await e.call(
        "PUT",
        "/user",
        { email, password: "test-password" },
        anon.access_token,
      );
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.email, email);
      assert.ok(!r.body.new_email);
      assert.equal(r.body.identities.length, 1);
      assert.equal(r.body.is_anonymous, false);
      const s = await e.signIn({ email }, "test-password");
      assert.equal(s.user.is_anonymous, false);
    },
  ),
]);

conformance("anonymous_test.go", {
  AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: "3/3600s",
}, [
  ported("TestRateLimitAnonymousSignups", async (e) => {
    for (let i = 0; i < 3; i++) assert.equal((await e.call("POST", "/signup", {})).status, 200);
    assertError(await e.call("POST", "/signup", {}), 429, "over_request_rate_limit");
    // X-Forwarded-For is ignored by default
    const fwd = await e.call("POST", "/signup", {}, undefined, { "x-forwarded-for": "1.2.3.4" });
    assertError(fwd, 429, "over_request_rate_limit");
  }),
]);

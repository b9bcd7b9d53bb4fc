/** Cases ported from supabase/auth internal/api/admin_test.go. */
import {
  assert,
  assertError,
  conformance,
  type Env,
  PASSWORD,
  ported,
  totpFactor,
} from "./_helpers.ts";

async function create(e: Env, body: Record<string, unknown>) {
  const r = await e.admin("POST", "/admin/users", body);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

// The list cases count every user, so each has a server of its own.
conformance("admin_test.go", {}, [
  ported("TestAdminUsers", async (e) => {
    const r = await e.admin("GET", "/admin/users");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("link"), '</admin/users?page=0>; rel="last"');
    assert.equal(r.headers.get("x-total-count"), "0");
  }),
]);
conformance("admin_test.go", {}, [
  ported("TestAdminUsers_CursorPaginationDisabled", async (e) => {
    // we page by number only, as GoTrue with its experimental cursor pagination off
    await create(e, { email: e.email() });
    const r = await e.admin("GET", "/admin/users?limit=1");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("x-total-count"), "1");
    assert.ok(!(r.headers.get("link") ?? "").includes('rel="next"'), r.headers.get("link")!);
    assert.equal(r.body.pagination, undefined);
    assert.equal(r.body.users.length, 1);
  }),
]);
conformance("admin_test.go", {}, [
  ported("TestAdminUsers_Pagination", async (e) => {
    await create(e, { email: e.email(), phone: e.phone() });
    await create(e, { email: e.email(), phone: e.phone() });
    const r = await e.admin("GET", "/admin/users?per_page=1");
    assert.equal(r.status, 200, r.text);
    assert.equal(
      r.headers.get("link"),
      '</admin/users?page=2&per_page=1>; rel="next", </admin/users?page=2&per_page=1>; rel="last"',
    );
    assert.equal(r.headers.get("x-total-count"), "2");
    for (const u of r.body.users) assert.ok(u.id);
  }),
], { sms: true });
for (const dir of ["asc", "desc"] as const) {
  conformance("admin_test.go", {}, [
    ported(`TestAdminUsers_Sort${dir === "asc" ? "Asc" : "Desc"}`, async (e) => {
      const first = await create(e, { email: e.email("test1") });
      e.clock.advance(60);
      const second = await create(e, { email: e.email("test2") });
      const q = dir === "asc" ? `?sort=${encodeURIComponent("created_at asc")}` : "";
      const r = await e.admin("GET", `/admin/users${q}`);
      assert.equal(r.status, 200, r.text);
      const emails = r.body.users.map((u: { email: string }) => u.email);
      assert.deepEqual(
        emails,
        dir === "asc" ? [first.email, second.email] : [second.email, first.email],
      );
    }),
  ]);
}

conformance("admin_test.go", {}, [
  ported("TestAdminUsersUnauthorized", async (e) => {
    const r = await e.call("GET", "/admin/users");
    assert.equal(r.status, 401, r.text);
  }),
  ported("TestAdminUsers_FilterEmail", async (e) => {
    const email = e.email("filteremail");
    await create(e, { email });
    const r = await e.admin("GET", `/admin/users?filter=${email.split("@")[0]}`);
    assert.equal(r.body.users.length, 1);
    assert.equal(r.body.users[0].email, email);
  }),
  ported("TestAdminUsers_FilterName", async (e) => {
    const tag = `Name${crypto.randomUUID().slice(0, 8)}`;
    const email = e.email();
    await create(e, { email, user_metadata: { full_name: `Test ${tag}` } });
    await create(e, { email: e.email() });
    const r = await e.admin("GET", `/admin/users?filter=${tag}`);
    assert.equal(r.body.users.length, 1);
    assert.equal(r.body.users[0].email, email);
  }),
  ported("TestAdminUserCreate/Only phone", async (e) => {
    const phone = e.phone();
    const u = await create(e, { phone, password: "test1" });
    assert.equal(u.email ?? "", "");
    assert.equal(`+${u.phone}`, phone);
    assert.equal(u.app_metadata.provider, "phone");
    assert.deepEqual(u.app_metadata.providers, ["phone"]);
    assert.equal(u.identities[0].identity_data.phone, u.phone);
  }),
  ported("TestAdminUserCreate/With password", async (e) => {
    const email = e.email();
    const u = await create(e, { email, phone: e.phone(), password: "test1" });
    assert.equal(u.email, email);
    assert.equal(u.app_metadata.provider, "email");
    assert.deepEqual([...u.app_metadata.providers].sort(), ["email", "phone"]);
  }),
  ported("TestAdminUserCreate/Without password", async (e) => {
    const email = e.email();
    const u = await create(e, { email, phone: "" });
    assert.equal(u.email, email);
    assert.deepEqual(u.app_metadata.providers, ["email"]);
    assert.equal(u.identities[0].identity_data.email, email);
  }),
  ported("TestAdminUserCreate/With empty string password", async (e) => {
    const email = e.email();
    const u = await create(e, { email, phone: "", password: "" });
    assert.equal(u.email, email);
    assert.deepEqual(u.app_metadata.providers, ["email"]);
  }),
  ported("TestAdminUserCreate/Ban created user", async (e) => {
    const email = e.email();
    const u = await create(e, {
      email,
      password: "test1",
      ban_duration: "24h",
      email_confirm: true,
    });
    assert.ok(u.banned_until);
    const r = await e.call("POST", "/token?grant_type=password", { email, password: "test1" });
    assertError(r, 400, "user_banned");
  }),
  ported("TestAdminUserCreate/With password hash", async (e) => {
    const email = e.email();
    await create(e, {
      email,
      email_confirm: true,
      password_hash: "$2y$10$SXEz2HeT8PUIGQXo9yeUIem8KzNxgG0d7o/.eGj2rj8KbRgAuRVlq",
    });
    await e.signIn({ email }, "test");
  }),
  ported("TestAdminUserCreate/With custom id", async (e) => {
    const id = crypto.randomUUID();
    const email = e.email();
    const u = await create(e, { id, email, password: "test", email_confirm: true });
    assert.equal(u.id, id);
    await e.signIn({ email }, "test");
  }),
  ported("TestAdminUserGet", async (e) => {
    const email = e.email();
    const u = await create(e, { email, user_metadata: { full_name: "Test Get User" } });
    const r = await e.admin("GET", `/admin/users/${u.id}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.email, email);
    assert.ok(r.body.app_metadata);
    assert.deepEqual(r.body.user_metadata, { full_name: "Test Get User" });
  }),
  ported("TestAdminUserUpdate", async (e) => {
    const u = await create(e, { email: e.email(), phone: e.phone() });
    const email = e.email("new");
    const phone = e.phone();
    const r = await e.admin("PUT", `/admin/users/${u.id}`, {
      role: "testing",
      app_metadata: { roles: ["writer", "editor"] },
      user_metadata: { name: "David" },
      ban_duration: "24h",
      email,
      phone,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.role, "testing");
    assert.equal(r.body.user_metadata.name, "David");
    assert.equal(r.body.email, email);
    assert.equal(`+${r.body.phone}`, phone);
    assert.deepEqual([...r.body.app_metadata.roles].sort(), ["editor", "writer"]);
    assert.ok(r.body.banned_until);
    for (const i of r.body.identities) {
      assert.equal(i.user_id, u.id);
      if (i.provider === "email") assert.equal(i.identity_data.email, email);
      if (i.provider === "phone") assert.equal(`+${i.identity_data.phone}`, phone);
    }
  }),
  ported("TestAdminUserUpdatePasswordFailed/Password doesn't meet minimum length", async (e) => {
    const u = await create(e, { email: e.email() });
    const r = await e.admin("PUT", `/admin/users/${u.id}`, { password: "" });
    assert.equal(r.status, 422, r.text);
  }),
  ported("TestAdminUserUpdateBannedUntilFailed/Incorrect format for ban_duration", async (e) => {
    const u = await create(e, { email: e.email() });
    const r = await e.admin("PUT", `/admin/users/${u.id}`, { ban_duration: "24" });
    assertError(r, 400, "validation_failed");
  }),
  ...([
    ["Test admin delete user (default)", undefined],
    ["Test admin delete user (hard deletion)", false],
    ["Test admin delete user (soft deletion)", true],
  ] as const).map(([desc, soft]) =>
    ported(`TestAdminUserDelete/${desc}`, async (e) => {
      const u = await create(e, { email: e.email(), user_metadata: { name: "test" } });
      const r = await e.admin(
        "DELETE",
        `/admin/users/${u.id}`,
        soft === undefined ? undefined : { should_soft_delete: soft },
      );
      assert.equal(r.status, 200, r.text);
      assertError(await e.admin("GET", `/admin/users/${u.id}`), 404, "user_not_found");
    })
  ),
  ported("TestAdminUserSoftDeletion", async (e) => {
    const email = e.email();
    const u = await create(e, { email, email_confirm: true, user_metadata: { name: "test" } });
    const r = await e.admin("DELETE", `/admin/users/${u.id}`, { should_soft_delete: true });
    assert.equal(r.status, 200, r.text);
    const row = await e.srv.services.users.findById(u.id);
    assert.equal(row, null, "a soft-deleted user is not found");
    const login = await e.call("POST", "/token?grant_type=password", { email, password: PASSWORD });
    assertError(login, 400, "invalid_credentials");
  }),
  ported("TestAdminUserDeleteFactor", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s);
    const r = await e.admin("DELETE", `/admin/users/${s.user.id}/factors/${f.id}`);
    assert.equal(r.status, 200, r.text);
    const list = await e.admin("GET", `/admin/users/${s.user.id}/factors`);
    assert.deepEqual(list.body, []);
    // the factor's AAL2 session is back to AAL1
    const refreshed = await e.call("POST", "/token?grant_type=refresh_token", {
      refresh_token: f.aal2.refresh_token,
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    const aal = JSON.parse(
      atob(refreshed.body.access_token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
    ).aal;
    assert.equal(aal, "aal1");
  }),
  ported("TestAdminUserGetFactors", async (e) => {
    const s = await e.session();
    const enroll = await e.call("POST", "/factors", { factor_type: "totp" }, s.access_token);
    assert.equal(enroll.status, 200, enroll.text);
    const r = await e.admin("GET", `/admin/users/${s.user.id}/factors`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.length, 1);
    assert.ok(!r.body[0].secret, "no secret in the list");
  }),
  ported("TestAdminUserCreateValidationErrors/create user without email and phone", async (e) => {
    assertError(await e.admin("POST", "/admin/users", { password: "test_password" }), 400);
  }),
  ported(
    "TestAdminUserCreateValidationErrors/create user with password and password hash",
    async (e) => {
      const r = await e.admin("POST", "/admin/users", {
        email: e.email(),
        password: "test_password",
        password_hash: "$2y$10$Tk6yEdmTbb/eQ/haDMaCsuCsmtPVprjHMcij1RqiJdLGPDXnL3L1a",
      });
      assertError(r, 400);
    },
  ),
  ported("TestAdminUserCreateValidationErrors/invalid ban duration", async (e) => {
    const r = await e.admin("POST", "/admin/users", { email: e.email(), ban_duration: "never" });
    assertError(r, 400);
  }),
  ported("TestAdminUserCreateValidationErrors/custom id is nil", async (e) => {
    const r = await e.admin("POST", "/admin/users", {
      id: "00000000-0000-0000-0000-000000000000",
      email: e.email(),
    });
    assertError(r, 400);
  }),
  ported("TestAdminUserCreateValidationErrors/bad id format", async (e) => {
    const r = await e.admin("POST", "/admin/users", { id: "bad_uuid_format", email: e.email() });
    assertError(r, 400);
  }),
], { sms: true });

for (
  const [desc, env, body] of [
    ["Email Signups Disabled", { AUTHSVC_EXTERNAL_EMAIL_ENABLED: "false" }, { password: "test1" }],
    ["Phone Signups Disabled", { AUTHSVC_EXTERNAL_PHONE_ENABLED: "false" }, { password: "test1" }],
    ["All Signups Disabled", { AUTHSVC_DISABLE_SIGNUP: "true" }, { password: "test2" }],
  ] as const
) {
  conformance("admin_test.go", env, [
    ported(`TestAdminUserCreateWithDisabledLogin/${desc}`, async (e) => {
      const address = desc.startsWith("Phone") ? { phone: e.phone() } : { email: e.email() };
      const r = await e.admin("POST", "/admin/users", { ...address, ...body });
      assert.equal(r.status, 200, r.text);
    }),
  ]);
}

conformance("admin_test.go", { AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true" }, [
  ported("TestAdminUserUpdateFactor/Update Factor friendly name", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s, "testSimpleName");
    const r = await e.admin("PUT", `/admin/users/${s.user.id}/factors/${f.id}`, {
      friendly_name: "john",
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, f.id);
    assert.equal(r.body.friendly_name, "john");
    assert.equal(r.body.status, "verified");
    assert.ok(!r.body.secret, "no secret in the answer");
    const list = await e.admin("GET", `/admin/users/${s.user.id}/factors`);
    assert.equal(list.body[0].friendly_name, "john");
    // the factor still works under its new name
    const me = await e.call("GET", "/user", undefined, f.aal2.access_token);
    assert.equal(me.body.factors[0].friendly_name, "john");
  }),
  ported("TestAdminUserUpdateFactor/Update Factor phone number", async (e) => {
    const s = await e.session();
    const old = e.phone();
    const enroll = await e.call("POST", "/factors", {
      factor_type: "phone",
      phone: old,
      friendly_name: "testSimpleName",
    }, s.access_token);
    assert.equal(enroll.status, 200, enroll.text);
    const to = e.phone();
    const r = await e.admin("PUT", `/admin/users/${s.user.id}/factors/${enroll.body.id}`, {
      phone: to,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(`+${r.body.phone}`, to);
    assert.equal(r.body.friendly_name, "testSimpleName");
    // the next challenge's code goes to the new number
    const ch = await e.call("POST", `/factors/${enroll.body.id}/challenge`, {}, s.access_token);
    assert.equal(ch.status, 200, ch.text);
    const code = e.sms!.lastCode(to);
    assert.ok(code, "no code sent to the new number");
    const v = await e.call("POST", `/factors/${enroll.body.id}/verify`, {
      challenge_id: ch.body.id,
      code,
    }, s.access_token);
    assert.equal(v.status, 200, v.text);
  }),
], { sms: true });

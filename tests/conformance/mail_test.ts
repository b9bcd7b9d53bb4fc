/** Cases ported from supabase/auth internal/api/mail_test.go (TestValidateEmail through /signup, TestGenerateLink). */
import { assert, assertError, conformance, differs, type Env, ported } from "./_helpers.ts";

const SITE = "http://localhost:3000";

async function sha224(text: string): Promise<string> {
  // WebCrypto has no SHA-224; GoTrue's value is only compared against, so node:crypto does it.
  const { createHash } = await import("node:crypto");
  return createHash("sha224").update(text).digest("hex");
}

async function generate(e: Env, body: Record<string, unknown>) {
  const r = await e.admin("POST", "/admin/generate_link", body);
  assert.equal(r.status, 200, r.text);
  for (const k of ["action_link", "email_otp", "hashed_token", "redirect_to"]) {
    assert.ok(k in r.body, `${k} missing: ${r.text}`);
  }
  assert.equal(r.body.verification_type, body.type);
  // GoTrue's format: 56 lower-case hex digits (a SHA-224), the link's token
  assert.match(r.body.hashed_token, /^[0-9a-f]{56}$/);
  assert.equal(new URL(r.body.action_link).searchParams.get("token"), r.body.hashed_token);
  return r.body;
}

async function pending(e: Env) {
  return (await e.user({ email: e.email(), email_confirm: false })).email as string;
}

conformance("mail_test.go", {
  AUTHSVC_MAILER_AUTOCONFIRM: "false",
  AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "true",
  AUTHSVC_URI_ALLOW_LIST: "http://localhost:8000/**",
}, [
  ported("TestValidateEmail/valid email", async (e) => {
    const email = e.email();
    const r = await e.call("POST", "/signup", { email, password: "secret123" });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.email, email);
  }),
  ported("TestValidateEmail/email should be normalized", async (e) => {
    const email = e.email();
    const r = await e.call("POST", "/signup", {
      email: email.toUpperCase(),
      password: "secret123",
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.email, email);
  }),
  ported("TestValidateEmail/empty email should return error", async (e) => {
    const r = await e.call("POST", "/recover", { email: "" });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "An email address is required");
  }),
  ported("TestValidateEmail/email length exceeds 255 characters", async (e) => {
    const r = await e.call("POST", "/recover", { email: `${"test".repeat(61)}@example.com` });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "An email address is too long");
  }),
  ported("TestValidateEmail (invalid format)", async (e) => {
    const r = await e.call("POST", "/signup", { email: "not-an-address", password: "secret123" });
    assertError(r, 400, "validation_failed");
    assert.equal(r.body.msg, "Unable to validate email address: invalid format");
  }),
  ported("TestGenerateLink/Generate signup link for new user", async (e) => {
    const b = await generate(e, { email: e.email(), password: "secret123", type: "signup" });
    assert.equal(b.redirect_to, SITE);
  }),
  ported("TestGenerateLink/Generate signup link for existing user", async (e) => {
    const b = await generate(e, { email: await pending(e), password: "secret123", type: "signup" });
    assert.equal(b.redirect_to, SITE);
  }),
  ported("TestGenerateLink/Generate signup link with custom redirect url", async (e) => {
    const b = await generate(e, {
      email: await pending(e),
      password: "secret123",
      type: "signup",
      redirect_to: "http://localhost:8000/welcome",
    });
    assert.equal(b.redirect_to, "http://localhost:8000/welcome");
  }),
  ported("TestGenerateLink/Generate magic link", async (e) => {
    const u = await e.user();
    const b = await generate(e, { email: u.email, type: "magiclink" });
    assert.equal(b.redirect_to, SITE);
  }),
  ported("TestGenerateLink/Generate invite link", async (e) => {
    const b = await generate(e, { email: await pending(e), type: "invite" });
    assert.equal(b.redirect_to, SITE);
  }),
  ported("TestGenerateLink/Generate recovery link", async (e) => {
    const u = await e.user();
    const b = await generate(e, { email: u.email, type: "recovery" });
    assert.equal(b.redirect_to, SITE);
  }),
  ported("TestGenerateLink/Generate email change link (email_change_current)", async (e) => {
    const u = await e.user();
    const b = await generate(e, {
      email: u.email,
      new_email: e.email("new"),
      type: "email_change_current",
    });
    assert.equal(b.redirect_to, SITE);
  }),
  ported("TestGenerateLink/Generate email change link (email_change_new)", async (e) => {
    const u = await e.user();
    const b = await generate(e, {
      email: u.email,
      new_email: e.email("new"),
      type: "email_change_new",
    });
    assert.equal(b.redirect_to, SITE);
  }),
  differs(
    "TestGenerateLink (hashed_token is sha224(email + email_otp))",
    "hashed_token has GoTrue's format (56 hex digits) but is 28 random bytes: a hash of the address and the 6-digit code could be found by trying every code through POST /verify token_hash, which, unlike a typed code, no attempt limit guards",
    async (e) => {
      const email = e.email();
      const b = await generate(e, { email, password: "secret123", type: "signup" });
      assert.notEqual(b.hashed_token, await sha224(email + b.email_otp));
      // and the code still works on its own
      const v = await e.call("POST", "/verify", { type: "signup", email, token: b.email_otp });
      assert.equal(v.status, 200, v.text);
    },
  ),
]);

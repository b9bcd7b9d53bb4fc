import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { AuthClient } from "../../helpers/deps.ts";
import { startFakeCaptcha } from "./_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

const SECRET = "0x-test-captcha-secret";
const GOOD = "P1_good-captcha-token";

for (const provider of ["hcaptcha", "turnstile"] as const) {
  Deno.test(`captcha (${provider}): sign-up needs a token the provider accepts`, async () => {
    const fake = startFakeCaptcha(provider, { secret: SECRET, goodToken: GOOD });
    const srv = await startTestServer({
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
      AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
      AUTHSVC_SECURITY_CAPTCHA_PROVIDER: provider,
      AUTHSVC_SECURITY_CAPTCHA_SECRET: SECRET,
      AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: fake.url,
    });
    try {
      const address = uniqueEmail("ops");
      const missing = await call(srv, "POST", "/signup", {
        body: { email: address, password: "pw-123456" },
      });
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error_code, "captcha_failed");
      assert.equal(fake.calls.length, 0, "no provider call without a token");

      const bad = await call(srv, "POST", "/signup", {
        body: {
          email: address,
          password: "pw-123456",
          captcha_token: "forged",
        },
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error_code, "captcha_failed");
      assert.match(String(bad.body.msg), /invalid-input-response/);

      // The handler reads the body the middleware already read: sign-up works.
      const ok = await call(srv, "POST", "/signup", {
        body: {
          email: address,
          password: "pw-123456",
          captcha_token: GOOD,
        },
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal((ok.body.user as { email: string }).email, address);

      // Where @supabase/auth-js puts it.
      const viaMeta = await call(srv, "POST", "/token?grant_type=password", {
        body: {
          email: address,
          password: "pw-123456",
          gotrue_meta_security: { captcha_token: GOOD },
        },
      });
      assert.equal(viaMeta.status, 200, JSON.stringify(viaMeta.body));
      assert.equal(typeof viaMeta.body.access_token, "string");

      assert.deepEqual(fake.problems, []);
      const last = fake.calls.at(-1)!;
      assert.equal(last.form.secret, SECRET);
      assert.equal(last.form.response, GOOD);
      assert.equal(last.form.remoteip, "127.0.0.1");
    } finally {
      await srv.close();
      await fake.close();
    }
  });
}

Deno.test("captcha: every protected endpoint refuses a request without a token", async () => {
  const fake = startFakeCaptcha("hcaptcha", { secret: SECRET, goodToken: GOOD });
  const srv = await startTestServer({
    AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: SECRET,
    AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: fake.url,
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  });
  try {
    const body = { email: uniqueEmail("ops"), password: "pw-123456", type: "signup" };
    for (
      const path of [
        "/signup",
        "/token?grant_type=password",
        "/otp",
        "/magiclink",
        "/recover",
        "/resend",
      ]
    ) {
      const r = await call(srv, "POST", path, { body: body });
      assert.equal(r.status, 400, path);
      assert.equal(r.body.error_code, "captcha_failed", path);
    }
    // The grant type in the body instead of the query string is the same password sign-in.
    const bodyGrant = await call(srv, "POST", "/token", {
      body: { ...body, grant_type: "password" },
    });
    assert.equal(bodyGrant.status, 400);
    assert.equal(bodyGrant.body.error_code, "captcha_failed");
    const formGrant = await srv.fetch("/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "password", ...body }),
    });
    assert.equal((await formGrant.json()).error_code, "captcha_failed");
    // Anonymous sign-in is a sign-up without e-mail and phone.
    const anon = await call(srv, "POST", "/signup", { body: { data: {} } });
    assert.equal(anon.body.error_code, "captcha_failed");
    // Refreshing a session needs no captcha.
    const refresh = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: "unknown",
      },
    });
    assert.notEqual(refresh.body.error_code, "captcha_failed");
    // An admin (service_role) is not asked for one.
    const admin = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("ops"), password: "pw-123456" },
      headers: {
        authorization: `Bearer ${await srv.serviceRoleToken()}`,
      },
    });
    assert.notEqual(admin.body.error_code, "captcha_failed");
    assert.deepEqual(fake.problems, []);
  } finally {
    await srv.close();
    await fake.close();
  }
});

Deno.test("captcha: a provider that does not answer in time refuses the request", async () => {
  const fake = startFakeCaptcha("turnstile", { secret: SECRET, goodToken: GOOD, delayMs: 3000 });
  const srv = await startTestServer({
    AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_PROVIDER: "turnstile",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: SECRET,
    AUTHSVC_SECURITY_CAPTCHA_TIMEOUT: "1s",
    AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: fake.url,
  });
  try {
    const r = await call(srv, "POST", "/signup", {
      body: {
        email: uniqueEmail("ops"),
        password: "pw-123456",
        captcha_token: GOOD,
      },
    });
    assert.equal(r.status, 503);
    assert.equal(r.body.error_code, "captcha_failed");
    assert.match(String(r.body.msg), /Turnstile did not answer within 1 s/);
    const [{ n }] = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("users")}`,
    );
    assert.equal(n, 0, "no user was created");
  } finally {
    await srv.close();
    await fake.close();
  }
});

Deno.test("captcha: a provider that cannot be reached refuses the request", async () => {
  const srv = await startTestServer({
    AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: SECRET,
    AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: "http://127.0.0.1:9/siteverify",
  });
  try {
    const r = await call(srv, "POST", "/otp", {
      body: { email: uniqueEmail("ops"), captcha_token: GOOD },
    });
    assert.equal(r.status, 503);
    assert.equal(r.body.error_code, "captcha_failed");
    assert.match(String(r.body.msg), /hCaptcha could not be reached/);
  } finally {
    await srv.close();
  }
});

Deno.test("captcha: @supabase/auth-js passes its captchaToken and signs up, in, and anonymously", async () => {
  const fake = startFakeCaptcha("turnstile", { secret: SECRET, goodToken: GOOD });
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
    AUTHSVC_SECURITY_CAPTCHA_PROVIDER: "Turnstile",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: SECRET,
    AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: fake.url,
  });
  const client = new AuthClient({
    url: srv.url,
    autoRefreshToken: false,
    persistSession: false,
    detectSessionInUrl: false,
  });
  try {
    const address = uniqueEmail("ops");
    const refused = await client.signUp({ email: address, password: "pw-123456" });
    assert.equal(refused.error?.code, "captcha_failed");
    assert.equal(refused.error?.status, 400);

    const up = await client.signUp({
      email: address,
      password: "pw-123456",
      options: { captchaToken: GOOD },
    });
    assert.equal(up.error, null);
    assert.equal(up.data.user?.email, address);

    const inn = await client.signInWithPassword({
      email: address,
      password: "pw-123456",
      options: { captchaToken: GOOD },
    });
    assert.equal(inn.error, null);
    assert.ok(inn.data.session?.access_token);

    const anon = await client.signInAnonymously({ options: { captchaToken: GOOD } });
    assert.equal(anon.error, null);
    assert.equal(anon.data.user?.is_anonymous, true);
    assert.deepEqual(fake.problems, []);
  } finally {
    await srv.close();
    await fake.close();
  }
});

/**
 * Auth hooks (GoTrue's HOOK_*), by HTTP with Standard Webhooks signatures
 * (verified by the reference library in tests/helpers/hook_server.ts) and by
 * PostgreSQL function, through the HTTP API. Payload and answer shapes follow
 * GoTrue's internal/hooks/v0hooks and internal/api/hooks_test.go.
 */
import assert from "node:assert/strict";
import { BASE_ENV, startTestServer, type TestServer } from "../../helpers/server.ts";
import { type HookHandler, type HookServer, startHookServer } from "../../helpers/hook_server.ts";
import { ConfigError, readConfig } from "../../../server/config/mod.ts";
import { jose } from "../../../deps.ts";
import { bearer, call, email, passwordGrant, refreshGrant, signUpSession } from "./_helpers.ts";
import { signedUp, TestClock, totpAt } from "../mfa/_helpers.ts";

function hookEnv(name: string, hook: HookServer, path = `/${name}`): Record<string, string> {
  const X = `AUTHSVC_HOOK_${name.toUpperCase()}`;
  return {
    [`${X}_ENABLED`]: "true",
    [`${X}_URI`]: `${hook.url}${path}`,
    [`${X}_SECRETS`]: hook.secret,
  };
}

async function withHook(
  handler: HookHandler,
  env: (hook: HookServer) => Record<string, string>,
  fn: (srv: TestServer, hook: HookServer) => Promise<void>,
  opts: { clock?: TestClock } = {},
) {
  const hook = startHookServer(handler);
  const srv = await startTestServer(
    { AUTHSVC_MAILER_AUTOCONFIRM: "true", ...env(hook) },
    opts.clock ? { clock: { now: () => new Date(opts.clock!.ms) } } : {},
  );
  try {
    await fn(srv, hook);
  } finally {
    await srv.close();
    await hook.close();
  }
}

Deno.test("custom access token hook (HTTP): claims added, token still validates", async () => {
  await withHook(
    (_p, payload) => ({
      claims: {
        ...(payload.claims as Record<string, unknown>),
        tenant: "acme",
        role: "authenticated",
      },
    }),
    (h) => hookEnv("custom_access_token", h),
    async (srv, hook) => {
      const s = await signUpSession(srv);
      assert.equal(jose.decodeJwt(s.access_token).tenant, "acme");
      const me = await call(srv, "GET", "/user", undefined, bearer(s.access_token));
      assert.equal(me.status, 200, "the customized token opens protected endpoints");
      const refreshed = await refreshGrant(srv, s.refresh_token);
      assert.equal(jose.decodeJwt(refreshed.body.access_token as string).tenant, "acme");
      assert.equal(hook.badSignatures, 0);
      const first = hook.calls[0];
      assert.ok(first.headers["webhook-id"] && first.headers["webhook-timestamp"]);
      assert.match(first.headers["webhook-signature"], /^v1,[A-Za-z0-9+/=]+$/);
      assert.equal(
        (first.payload.metadata as Record<string, unknown>).name,
        "customize-access-token",
      );
      assert.equal(first.payload.user_id, (s.user as Record<string, unknown>).id);
      assert.equal(first.payload.authentication_method, "password");
      assert.equal((first.payload.claims as Record<string, unknown>).sub, first.payload.user_id);
    },
  );
});

Deno.test("custom access token hook: a dropped claim or a hook error fails clearly", async () => {
  let answer: unknown = {};
  await withHook(
    () => answer,
    (h) => hookEnv("custom_access_token", h),
    async (srv) => {
      answer = { claims: { sub: "x" } };
      let r = await call(srv, "POST", "/signup", { email: email(), password: "secret-pw-1" });
      assert.equal(r.status, 500);
      assert.match(r.body.msg as string, /output claims do not conform.*aud/);
      answer = { error: { http_code: 403, message: "tenant suspended" } };
      r = await call(srv, "POST", "/signup", { email: email(), password: "secret-pw-1" });
      // GoTrue answers with the hook's own http_code (internal/hooks/hookserrors)
      assert.equal(r.status, 403);
      assert.equal(r.body.code, 403);
      assert.equal(r.body.msg, "tenant suspended");
      answer = { error: { http_code: 429, message: "slow down" } };
      r = await call(srv, "POST", "/signup", { email: email(), password: "secret-pw-1" });
      assert.equal(r.status, 429);
      assert.equal(r.body.msg, "slow down");
      // outside 400-499, or none: GoTrue's fallback, 500
      for (const http_code of [undefined, 302, 503]) {
        answer = { error: { http_code, message: "broken hook" } };
        r = await call(srv, "POST", "/signup", { email: email(), password: "secret-pw-1" });
        assert.equal(r.status, 500, `http_code ${http_code}`);
        assert.equal(r.body.error_code, "unexpected_failure");
        assert.equal(r.body.msg, "broken hook");
      }
      answer = new Response("<html>", { headers: { "content-type": "text/html" } });
      r = await call(srv, "POST", "/signup", { email: email(), password: "secret-pw-1" });
      assert.equal(r.status, 400);
      assert.equal(r.body.error_code, "hook_payload_invalid_content_type");
    },
  );
});

Deno.test("a hook that does not answer in time: 422 hook_timeout", async () => {
  let release = () => {};
  const hanging = new Promise<void>((r) => release = r);
  await withHook(
    async () => {
      await hanging;
      return {};
    },
    (h) => ({ ...hookEnv("custom_access_token", h), AUTHSVC_HOOK_HTTP_TIMEOUT: "0.3" }),
    async (srv) => {
      const r = await call(srv, "POST", "/signup", { email: email(), password: "secret-pw-1" });
      release();
      assert.equal(r.status, 422);
      assert.equal(r.body.error_code, "hook_timeout");
    },
  );
});

Deno.test("custom access token hook as a PostgreSQL function", async () => {
  const fn = `cat_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_ENABLED: "true",
    AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_URI: `pg-functions://postgres/public/${fn}`,
  });
  try {
    await srv.db.query(
      `CREATE FUNCTION public.${fn}(event jsonb) RETURNS jsonb LANGUAGE sql AS $$
         SELECT jsonb_build_object('claims',
           (event->'claims') || jsonb_build_object('plan', 'pro', 'method', event->>'authentication_method'))
       $$`,
    );
    const s = await signUpSession(srv);
    const c = jose.decodeJwt(s.access_token);
    assert.equal(c.plan, "pro");
    assert.equal(c.method, "password");
    assert.equal((await call(srv, "GET", "/user", undefined, bearer(s.access_token))).status, 200);
    // a refresh signs inside its transaction: the function runs beside it
    const refreshed = await refreshGrant(srv, s.refresh_token);
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    assert.equal(jose.decodeJwt(refreshed.body.access_token as string).plan, "pro");
  } finally {
    await srv.db.query(`DROP FUNCTION IF EXISTS public.${fn}(jsonb)`).catch(() => {});
    await srv.close();
  }
});

Deno.test("password verification attempt hook may reject, with its message", async () => {
  await withHook(
    (_p, payload) =>
      payload.valid
        ? { decision: "continue" }
        : { decision: "reject", message: "Too many failed attempts", should_logout_user: true },
    (h) => hookEnv("password_verification_attempt", h),
    async (srv, hook) => {
      const address = email();
      const s = await signUpSession(srv, address, "secret-pw-1");
      const ok = await passwordGrant(srv, { email: address, password: "secret-pw-1" });
      assert.equal(ok.status, 200);
      const bad = await passwordGrant(srv, { email: address, password: "wrong-pw-1" });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error_code, "invalid_credentials");
      assert.equal(bad.body.msg, "Too many failed attempts");
      // should_logout_user: the sessions are gone
      assert.equal((await refreshGrant(srv, s.refresh_token)).status, 400);
      assert.deepEqual(hook.calls.map((c) => c.payload.valid), [true, false]);
      assert.equal(
        (hook.calls[0].payload.metadata as Record<string, unknown>).name,
        "password-verification",
      );
    },
  );
});

Deno.test("MFA verification attempt hook may reject: 403 and every session ends", async () => {
  const clock = new TestClock();
  await withHook(
    (_p, payload) => payload.valid ? { decision: "continue" } : { decision: "reject" },
    (h) => hookEnv("mfa_verification_attempt", h),
    async (srv, hook) => {
      const { client: app } = await signedUp(srv);
      const f = (await app.mfa.enroll({ factorType: "totp" })).data!;
      const ch = (await app.mfa.challenge({ factorId: f.id })).data!;
      const wrong = totpAt(f.totp.secret, clock.ms) === "000000" ? "111111" : "000000";
      const r = await app.mfa.verify({ factorId: f.id, challengeId: ch.id, code: wrong });
      assert.equal(r.error?.status, 403);
      assert.equal(r.error?.code, "mfa_verification_rejected");
      assert.equal(r.error?.message, "Further MFA verification attempts will be rejected.");
      const p = hook.calls[0].payload;
      assert.equal(p.factor_id, f.id);
      assert.equal(p.factor_type, "totp");
      assert.equal(p.valid, false);
      // GoTrue ends every session of the user on a rejected attempt
      const refresh = (await app.getSession()).data.session!.refresh_token;
      assert.equal((await refreshGrant(srv, refresh)).status, 400);
    },
    { clock },
  );
});

Deno.test("send SMS hook delivers the code instead of a gateway", async () => {
  await withHook(
    () => ({}),
    (h) => ({ ...hookEnv("send_sms", h), AUTHSVC_EXTERNAL_PHONE_ENABLED: "true" }),
    async (srv, hook) => {
      const phone = `1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
      const sent = await call(srv, "POST", "/otp", { phone: `+${phone}` });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assert.equal(hook.calls.length, 1);
      const sms = hook.calls[0].payload.sms as Record<string, string>;
      assert.equal(sms.phone, phone);
      assert.match(sms.otp, /^\d{6}$/);
      const v = await call(srv, "POST", "/verify", {
        type: "sms",
        phone: `+${phone}`,
        token: sms.otp,
      });
      assert.equal(v.status, 200, JSON.stringify(v.body));
      assert.equal(typeof v.body.access_token, "string");
    },
  );
});

Deno.test("send email hook delivers the confirmation instead of SMTP", async () => {
  await withHook(
    () => ({}),
    (h) => ({ ...hookEnv("send_email", h), AUTHSVC_MAILER_AUTOCONFIRM: "false" }),
    async (srv, hook) => {
      const address = email("hook");
      const r = await call(srv, "POST", "/signup", { email: address, password: "secret-pw-1" });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(hook.calls.length, 1);
      const { user, email_data } = hook.calls[0].payload as {
        user: Record<string, unknown>;
        email_data: Record<string, string>;
      };
      assert.equal(user.email, address);
      assert.equal(email_data.email_action_type, "signup");
      assert.equal(email_data.site_url, "http://localhost:3000");
      assert.match(email_data.token, /^\d{6}$/);
      const v = await call(srv, "POST", "/verify", {
        type: "signup",
        token_hash: email_data.token_hash,
      });
      assert.equal(v.status, 200, JSON.stringify(v.body));
      assert.ok((v.body.user as Record<string, unknown>).email_confirmed_at);
    },
  );
});

Deno.test("hook settings are checked at start", () => {
  const bad = (env: Record<string, string>, re: RegExp) =>
    assert.throws(
      () => readConfig({ ...BASE_ENV, ...env }),
      (e) => e instanceof ConfigError && re.test(e.message),
    );
  const X = "AUTHSVC_HOOK_SEND_SMS";
  bad({ [`${X}_ENABLED`]: "true" }, /AUTHSVC_HOOK_SEND_SMS_URI: required/);
  bad(
    {
      [`${X}_ENABLED`]: "true",
      [`${X}_URI`]: "http://hooks.example.com/sms",
      [`${X}_SECRETS`]: "v1,whsec_" + "A".repeat(44),
    },
    /AUTHSVC_HOOK_SEND_SMS_URI: http:\/\/ is accepted only for localhost/,
  );
  bad(
    { [`${X}_ENABLED`]: "true", [`${X}_URI`]: "https://hooks.example.com/sms" },
    /_SECRETS: an HTTP hook needs/,
  );
  bad(
    {
      [`${X}_ENABLED`]: "true",
      [`${X}_URI`]: "https://hooks.example.com/sms",
      [`${X}_SECRETS`]: "whsec_short",
    },
    /_SECRETS: each secret must look like/,
  );
  bad(
    { [`${X}_ENABLED`]: "true", [`${X}_URI`]: "pg-functions://postgres/public" },
    /pg-functions:\/\/<database>/,
  );
  const { config } = readConfig({
    ...BASE_ENV,
    [`${X}_ENABLED`]: "true",
    [`${X}_URI`]: "https://hooks.example.com/sms",
    [`${X}_SECRETS`]: `v1,whsec_${"A".repeat(44)}|v1,whsec_${"B".repeat(44)}`,
  });
  assert.equal(config.hooks.points.send_sms.secrets.length, 2);
});

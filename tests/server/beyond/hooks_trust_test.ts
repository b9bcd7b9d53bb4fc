/**
 * Hooks you can trust (issue 44 item 7): supabase/auth#2038 and supabase/auth#2499, hook
 * requests that arrive unsigned or cannot be told from forged ones, and hooks that fail without
 * the operator learning which one or why.
 *
 * - Every kind of HTTP hook is driven through its real flow against an endpoint that verifies
 *   the Standard Webhooks signature with the reference library (tests/helpers/hook_server.ts)
 *   and refuses anything else: a kind the flows do not reach, or a request not signed with the
 *   configured secret, fails the test.
 * - The console's Hooks page sends each configured hook a sample and shows the answer, status,
 *   time and whether the hook checks signatures (a wrongly signed copy must be refused).
 * - A hook that answers nonsense leaves a `hook_failed` audit entry naming it and what was wrong.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { type HookHandler, newWebhookSecret, startHookServer } from "../../helpers/hook_server.ts";
import { call, type Json, uniqueEmail } from "../../helpers/http.ts";
import { HOOK_NAMES, type HookName, METADATA_NAMES } from "../../../server/auth/hooks.ts";
import { Client, consoleSignIn, createUser } from "../console/_helpers.ts";

/** The settings of hook `name` at `url`, with `secrets`. */
function hookEnv(name: HookName, url: string, secrets: string): Record<string, string> {
  const X = `AUTHSVC_HOOK_${name.toUpperCase()}`;
  return { [`${X}_ENABLED`]: "true", [`${X}_URI`]: url, [`${X}_SECRETS`]: secrets };
}

/** Answers of a hook that lets every flow go on. */
const agreeable: HookHandler = (path, payload) => {
  if (path === "/custom_access_token") return { claims: payload.claims };
  if (path.endsWith("_attempt")) return { decision: "continue" };
  return {};
};

/** Resolves with the first audit entry of `action` the server writes from now on. */
function nextAudit(srv: TestServer, action: string): Promise<Json> {
  return new Promise((resolve) => {
    srv.services.events.on("audit", (p) => {
      if (p.action === action) resolve(p);
    });
  });
}

Deno.test("auth#2499: every kind of HTTP hook is called signed, through its real flow", async () => {
  const hook = startHookServer(agreeable);
  // Two secrets, as during a rotation: the one the endpoint knows and one it does not.
  const secrets = `${newWebhookSecret()}|${hook.secret}`;
  const env: Record<string, string> = {
    AUTHSVC_MAILER_AUTOCONFIRM: "false",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
  };
  for (const name of HOOK_NAMES) Object.assign(env, hookEnv(name, `${hook.url}/${name}`, secrets));
  const srv = await startTestServer(env);
  try {
    // Sign-up: before/after user created, and the confirmation mail through send_email.
    const address = uniqueEmail("signed");
    const up = await call(srv, "POST", "/signup", {
      body: { email: address, password: "signed-hooks-1" },
    });
    assert.equal(up.status, 200, up.text);
    const mail = hook.calls.find((c) => c.path === "/send_email")!.payload.email_data as Json;
    const verified = await call(srv, "POST", "/verify", {
      body: { type: "signup", token_hash: mail.token_hash },
    });
    assert.equal(verified.status, 200, verified.text);
    // Password sign-in: the attempt hook, then the access token hook.
    const signIn = await call(srv, "POST", "/token?grant_type=password", {
      body: { email: address, password: "signed-hooks-1" },
    });
    assert.equal(signIn.status, 200, signIn.text);
    const token = signIn.body.access_token as string;
    // A TOTP code checked: the MFA attempt hook (a wrong code still asks it).
    const factor = await call(srv, "POST", "/factors", { token, body: { factor_type: "totp" } });
    assert.equal(factor.status, 200, factor.text);
    const fid = factor.body.id as string;
    const ch = await call(srv, "POST", `/factors/${fid}/challenge`, { token, body: {} });
    const wrong = await call(srv, "POST", `/factors/${fid}/verify`, {
      token,
      body: { challenge_id: ch.body.id, code: "000000" },
    });
    assert.equal(wrong.body.error_code, "mfa_verification_failed", wrong.text);
    // An SMS code: send_sms.
    const sms = await call(srv, "POST", "/otp", { body: { phone: "+15555550123" } });
    assert.equal(sms.status, 200, sms.text);

    assert.equal(hook.badSignatures, 0, "a hook request was not signed with the secret");
    const seen = new Set(hook.calls.map((c) => (c.payload.metadata as Json).name));
    const expected = HOOK_NAMES.map((n) => METADATA_NAMES[n]);
    assert.deepEqual([...seen].sort(), [...expected].sort(), "every kind of hook was called");
    for (const c of hook.calls) {
      // One signature per configured secret, so either secret of a rotation verifies.
      assert.equal(c.headers["webhook-signature"].split(" ").length, 2, c.path);
    }
  } finally {
    await srv.close();
    await hook.close();
  }
});

Deno.test("auth#2038: the console's Hooks page checks each hook: answer, status, time, signature", async () => {
  // The SMS hook's path answers HTML; the others as the flows expect.
  const good = startHookServer((path, payload) =>
    path === "/html"
      ? new Response("<html>nonsense</html>", { headers: { "content-type": "text/html" } })
      : agreeable(path, payload)
  );
  // A send-mail endpoint that never looks at the signature: anyone could forge its calls.
  const lax = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      await req.body?.cancel();
      return Response.json({});
    },
  );
  const laxUrl = `http://127.0.0.1:${lax.addr.port}/send`;
  const fn = `mfa_check_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const srv = await startTestServer({
    AUTHSVC_CONSOLE_ENABLED: "true",
    ...hookEnv("custom_access_token", `${good.url}/custom_access_token`, good.secret),
    ...hookEnv("send_email", laxUrl, newWebhookSecret()),
    ...hookEnv("send_sms", `${good.url}/html`, good.secret),
    ...hookEnv("mfa_verification_attempt", `pg-functions://postgres/public/${fn}`, ""),
  });
  try {
    // The function writes a row: the check runs it in a transaction that is rolled back.
    await srv.db.exec(
      `CREATE TABLE public.${fn}_calls (at timestamptz);
       CREATE FUNCTION public.${fn}(event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO public.${fn}_calls VALUES (now());
         RETURN jsonb_build_object('decision', 'continue', 'factor', event->>'factor_type');
       END $$;`,
    );
    const email = uniqueEmail("hookop");
    await createUser(srv, email, "operator-password-1", "supabase_admin");
    const op = new Client(srv);
    const signedIn = await consoleSignIn(op, email, "operator-password-1");
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));

    const out = await op.json("/console/api/hooks/check", "POST");
    assert.equal(out.status, 200, JSON.stringify(out.body));
    const by = Object.fromEntries(
      (out.body.hooks as Json[]).map((r) => [r.hook as string, r]),
    ) as Record<string, Json>;
    assert.deepEqual(Object.keys(by).sort(), [
      "custom_access_token",
      "mfa_verification_attempt",
      "send_email",
      "send_sms",
    ]);
    for (const r of Object.values(by)) assert.equal(typeof r.ms, "number");

    const cat = by.custom_access_token;
    assert.equal(cat.status, 200);
    assert.equal(cat.ok, true, JSON.stringify(cat));
    assert.deepEqual(cat.signature, { verdict: "verified", forgedStatus: 401 });
    assert.equal((JSON.parse(cat.answer as string).claims as Json).email, email);
    // The sample reached the endpoint signed, and was about the operator.
    const sample = good.calls.find((c) => c.path === "/custom_access_token")!.payload;
    assert.equal((sample.metadata as Json).name, "customize-access-token");
    assert.equal((sample.claims as Json).email, email);

    const mail = by.send_email;
    assert.equal(mail.status, 200);
    assert.equal(mail.ok, false);
    assert.equal((mail.signature as Json).verdict, "not_checked");
    assert.match(mail.problem as string, /does not verify the webhook-signature header/);

    const pw = by.send_sms;
    assert.equal(pw.ok, false);
    assert.match(pw.problem as string, /Content-Type text\/html, expected application\/json/);
    assert.equal(pw.answer, "<html>nonsense</html>");

    const mfa = by.mfa_verification_attempt;
    assert.equal(mfa.kind, "pg-functions");
    assert.equal(mfa.ok, true, JSON.stringify(mfa));
    assert.equal(mfa.signature, null);
    assert.deepEqual(JSON.parse(mfa.answer as string), { decision: "continue", factor: "totp" });
    const [rows] = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM public.${fn}_calls`,
    );
    assert.equal(rows.n, 0, "the sample call was rolled back");

    // Only for operators.
    const stranger = new Client(srv);
    await (await stranger.fetch("/console/")).body?.cancel();
    const refused = await stranger.json("/console/api/hooks/check", "POST");
    assert.equal(refused.status, 401);
  } finally {
    await srv.db.exec(
      `DROP FUNCTION IF EXISTS public.${fn}(jsonb); DROP TABLE IF EXISTS public.${fn}_calls;`,
    ).catch(() => {});
    await srv.close();
    await good.close();
    await lax.shutdown();
  }
});

Deno.test("a hook that answers nonsense leaves an audit entry naming it and what was wrong", async () => {
  let claimsAnswer: unknown = new Response("<html>oops</html>", {
    headers: { "content-type": "text/html" },
  });
  let decision = "continue";
  const hook = startHookServer((path, payload) => {
    if (path === "/password") return { decision };
    const a = claimsAnswer;
    return a instanceof Response ? a.clone() : a ?? { claims: payload.claims };
  });
  const srv = await startTestServer({
    ...hookEnv("custom_access_token", `${hook.url}/custom_access_token`, hook.secret),
    ...hookEnv("password_verification_attempt", `${hook.url}/password`, hook.secret),
  });
  const signIn = () =>
    call(srv, "POST", "/token?grant_type=password", {
      body: { email: address, password: "nonsense-pw-1" },
    });
  const address = uniqueEmail("nonsense");
  try {
    await createUser(srv, address, "nonsense-pw-1");
    let entry = nextAudit(srv, "hook_failed");
    const html = await signIn();
    assert.equal(html.body.error_code, "hook_payload_invalid_content_type", html.text);
    let e = await entry;
    assert.equal(e.log_type, "hook");
    assert.deepEqual({ ...(e.traits as Json), ms: 0 }, {
      hook: "custom_access_token",
      uri: `${hook.url}/custom_access_token`,
      problem: "answered Content-Type text/html, expected application/json",
      ms: 0,
    });

    // Claims that drop a required one.
    claimsAnswer = { claims: { sub: "x" } };
    entry = nextAudit(srv, "hook_failed");
    const dropped = await signIn();
    assert.equal(dropped.status, 500);
    e = await entry;
    assert.equal((e.traits as Json).hook, "custom_access_token");
    assert.match(
      (e.traits as Json).problem as string,
      /^answered claims that drop a required one: aud is missing/,
    );

    // A decision that is neither continue nor reject: the sign-in goes on (as in GoTrue), and
    // the operator learns that the hook lets everyone through.
    claimsAnswer = undefined;
    decision = "deny";
    entry = nextAudit(srv, "hook_failed");
    const denied = await signIn();
    assert.equal(denied.status, 200, denied.text);
    e = await entry;
    assert.equal((e.traits as Json).hook, "password_verification_attempt");
    assert.match((e.traits as Json).problem as string, /decision "deny", which is neither/);

    // A deliberate error answer is a decision, not a fault: no entry for it.
    decision = "continue";
    claimsAnswer = { error: { http_code: 403, message: "tenant suspended" } };
    assert.equal((await signIn()).status, 403);

    // Admins find the entries in the audit log.
    const admin = { authorization: `Bearer ${await srv.serviceRoleToken()}` };
    const log = await call(srv, "GET", "/admin/audit?query=action:hook_failed", {
      headers: admin,
    });
    assert.equal(log.status, 200);
    assert.deepEqual(
      (log.body as unknown as { payload: Json }[]).map((x) => (x.payload.traits as Json).hook),
      ["password_verification_attempt", "custom_access_token", "custom_access_token"],
    );
  } finally {
    await srv.close();
    await hook.close();
  }
});

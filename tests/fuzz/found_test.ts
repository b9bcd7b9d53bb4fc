/**
 * Reproductions of defects the fuzz found (tests/fuzz/), each through the
 * HTTP API: a request answered with an error must leave no row behind.
 */
import assert from "node:assert/strict";
import { postJson, startTestServer, type TestServer } from "../helpers/server.ts";
import { withEmail } from "../server/email/_helpers.ts";
import { withPhoneServer } from "../server/phone/_helpers.ts";
import { call } from "../helpers/http.ts";

const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

async function rows(srv: TestServer, table: string): Promise<number> {
  const [r] = await srv.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${srv.db.t(table)}`,
  );
  return r.n;
}

async function confirmed(srv: TestServer, email: string, password = "Found-pw-1234") {
  const admin = await srv.serviceRoleToken();
  const r = await call(srv, "POST", "/admin/users", {
    body: { email, password, email_confirm: true },
    token: admin,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id as string;
}

for (const path of ["/recover", "/magiclink"]) {
  Deno.test(`found: POST ${path} with PKCE refused by the mail interval leaves no flow state`, async () => {
    await withEmail({}, async ({ srv, smtp }) => {
      const email = "found-flow@example.com";
      await confirmed(srv, email);
      const body = { email, code_challenge: CHALLENGE, code_challenge_method: "s256" };
      const first = await postJson(srv, path, body);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      await smtp.waitForMail(email);
      const before = await rows(srv, "flow_state");
      const second = await postJson(srv, path, body);
      assert.equal(second.status, 429, JSON.stringify(second.body));
      assert.equal(await rows(srv, "flow_state"), before, "the refused request left a flow state");
    });
  });
}

Deno.test("found: PUT /user with a new phone and a weak password sends no code and stores nothing", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms }) => {
    const email = "found-weak@example.com";
    await confirmed(srv, email);
    const signIn = await postJson(srv, "/token?grant_type=password", {
      email,
      password: "Found-pw-1234",
    });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const token = signIn.body.access_token as string;
    const before = { otp: await rows(srv, "one_time_tokens"), sent: await rows(srv, "send_log") };
    const r = await call(srv, "PUT", "/user", {
      body: { phone: "+15550001234", password: "short" },
      token: token,
    });
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.error_code, "weak_password");
    assert.deepEqual(
      { otp: await rows(srv, "one_time_tokens"), sent: await rows(srv, "send_log") },
      before,
    );
    assert.equal(sms.messages.length, 0, "a code went out");
    const me = await call(srv, "GET", "/user", { token: token });
    assert.equal(me.body.new_phone ?? "", "", "a phone change is pending");
  });
});

Deno.test("found: GET /authorize with a huge query answers 400, not a Location header of its size", async () => {
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_GITHUB_ENABLED: "true",
    AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID: "found-client",
    AUTHSVC_EXTERNAL_GITHUB_SECRET: "found-secret",
    AUTHSVC_EXTERNAL_GITHUB_REDIRECT_URI: "http://localhost:8081/callback",
  });
  try {
    const ok = await srv.fetch("/authorize?provider=github&prompt=consent", { redirect: "manual" });
    await ok.body?.cancel();
    assert.equal(ok.status, 302);
    assert.match(ok.headers.get("location") ?? "", /prompt=consent/);
    for (
      const query of [
        `type=${"a".repeat(20_000)}`,
        `prompt=${"a".repeat(9_000)}`,
      ]
    ) {
      const res = await srv.fetch(`/authorize?provider=github&${query}`, { redirect: "manual" });
      const text = await res.text();
      assert.equal(res.status, 400, `${res.headers.get("location")?.length} ${text}`);
      const body = JSON.parse(text);
      assert.equal(body.error_code, "validation_failed");
      assert.equal(res.headers.get("location"), null);
    }
  } finally {
    await srv.close();
  }
});

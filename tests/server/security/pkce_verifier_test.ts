/**
 * Attack: whoever sees a PKCE code in a URL (a shared screen, a proxy log, a
 * browser extension) cancels the sign-in of the browser that holds the
 * verifier (issue 38, item 11): `grant_type=pkce` used the flow up before it
 * compared the verifier, so one request with a wrong verifier made the right
 * one fail. As in GoTrue's token.go, the verifier is checked first and the
 * flow is consumed only by the exchange that passes, once.
 */
import assert from "node:assert/strict";
import { call } from "../../helpers/http.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../../helpers/smtp.ts";
import { sha256Base64url } from "../../../server/util/crypto.ts";
import { account } from "./_helpers.ts";

async function withMail(fn: (srv: TestServer, smtp: TestSmtp) => Promise<void>) {
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...smtp.env, AUTHSVC_SMTP_LINK_FREQUENCY: "0" });
  try {
    await fn(srv, smtp);
  } finally {
    await srv.close();
    await smtp.close();
  }
}

/** A magic link in the PKCE flow opened by the user: the `?code=` it lands with. */
async function pkceCode(srv: TestServer, smtp: TestSmtp, email: string, verifier: string) {
  const sent = await call(srv, "POST", "/otp", {
    body: {
      email,
      code_challenge: await sha256Base64url(verifier),
      code_challenge_method: "s256",
    },
  });
  assert.equal(sent.status, 200, sent.text);
  const mail = await smtp.waitForMail(email, { subject: /Magic Link/i });
  const opened = await srv.fetch(new URL(mail.link).pathname + new URL(mail.link).search, {
    redirect: "manual",
  });
  await opened.body?.cancel();
  assert.equal(opened.status, 303);
  const code = new URL(opened.headers.get("location")!).searchParams.get("code");
  assert.ok(code, "the link lands with ?code=");
  return code;
}

function exchange(srv: TestServer, authCode: string, verifier: string) {
  return call(srv, "POST", "/token?grant_type=pkce", {
    body: { auth_code: authCode, code_verifier: verifier },
  });
}

Deno.test("a wrong PKCE verifier from someone who saw the code does not cancel the user's sign-in", async () => {
  await withMail(async (srv, smtp) => {
    const user = await account(srv);
    const verifier = `${crypto.randomUUID()}${crypto.randomUUID()}`;
    const code = await pkceCode(srv, smtp, user.email, verifier);

    for (let i = 0; i < 3; i++) {
      const wrong = await exchange(srv, code, `${crypto.randomUUID()}${crypto.randomUUID()}`);
      assert.equal(wrong.status, 400, wrong.text);
      assert.equal(wrong.body.error_code, "bad_code_verifier");
      assert.equal(wrong.body.access_token, undefined);
    }
    const right = await exchange(srv, code, verifier);
    assert.equal(right.status, 200, right.text);
    assert.equal((right.body.user as { id: string }).id, user.userId);
    // Used up by the exchange that passed.
    const again = await exchange(srv, code, verifier);
    assert.equal(again.status, 404, again.text);
    assert.equal(again.body.error_code, "flow_state_not_found");
  });
});

Deno.test("two exchanges of one PKCE code at once: one session", async () => {
  await withMail(async (srv, smtp) => {
    const user = await account(srv);
    const verifier = `${crypto.randomUUID()}${crypto.randomUUID()}`;
    const code = await pkceCode(srv, smtp, user.email, verifier);
    const answers = await Promise.all([1, 2, 3, 4].map(() => exchange(srv, code, verifier)));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 404, 404, 404], answers.map((a) => a.text).join("\n"));
  });
});

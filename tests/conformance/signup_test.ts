/** Cases ported from supabase/auth internal/api/signup_test.go. */
import { assert, assertError, conformance, type Env, pathOf, ported } from "./_helpers.ts";

const OFF = { AUTHSVC_MAILER_AUTOCONFIRM: "false" };

async function signupTwice(e: Env, confirm: boolean) {
  const email = e.email("twice");
  const first = await e.call("POST", "/signup", { email, password: "test123", data: { a: 1 } });
  assert.equal(first.status, 200, first.text);
  if (confirm) {
    const mail = await e.smtp.waitForMail(email);
    assert.equal((await e.call("GET", pathOf(mail.link))).status, 303);
  }
  const again = await e.call("POST", "/signup", { email, password: "test123", data: { a: 1 } });
  assert.equal(again.status, 200, again.text);
  assert.notEqual(again.body.id, first.body.id);
  assert.equal(again.body.email, email);
  assert.equal(again.body.aud, "authenticated");
  assert.equal(again.body.user_metadata.a, 1);
  assert.equal(again.body.app_metadata.provider, "email");
  assert.deepEqual(again.body.app_metadata.providers, ["email"]);
  return again;
}

conformance("signup_test.go", OFF, [
  ported("TestSignup", async (e) => {
    const email = e.email();
    const r = await e.call("POST", "/signup", { email, password: "test123", data: { a: 1 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.email, email);
    assert.equal(r.body.aud, "authenticated");
    assert.equal(r.body.user_metadata.a, 1);
    assert.equal(r.body.app_metadata.provider, "email");
    assert.deepEqual(r.body.app_metadata.providers, ["email"]);
  }),
  ported("TestSignupTwice", async (e) => {
    // a confirmed address: a fabricated user without identities (sanitizeUser)
    const again = await signupTwice(e, true);
    assert.deepEqual(again.body.identities, []);
    assert.equal(again.body.email_confirmed_at, undefined);
  }),
  ported("TestSignupTwice (unconfirmed address: the confirmation is sent again)", async (e) => {
    const again = await signupTwice(e, false);
    assert.equal(again.body.identities.length, 1);
    assert.ok(again.body.confirmation_sent_at);
  }),
  ported("TestVerifySignup", async (e) => {
    const email = e.email();
    await e.call("POST", "/signup", { email, password: "testing" });
    const mail = await e.smtp.waitForMail(email);
    const r = await e.call("GET", pathOf(mail.link));
    assert.equal(r.status, 303);
    const hash = new URLSearchParams(new URL(r.headers.get("location")!).hash.slice(1));
    assert.ok(hash.get("access_token"));
    assert.ok(hash.get("expires_in"));
    assert.ok(hash.get("refresh_token"));
  }),
  ported("TestSignupRequestBodyTooLarge", async (e) => {
    const big = "x".repeat((1 << 20) + 1);
    const r = await e.call("POST", "/signup", big, undefined, {
      "content-type": "application/json",
    });
    assertError(r, 413, "request_entity_too_large");
  }),
]);

conformance("signup_test.go", { AUTHSVC_MAILER_AUTOCONFIRM: "true" }, [
  ported("TestSignupTwice (autoconfirm: 422 user_already_exists)", async (e) => {
    const email = e.email();
    assert.equal((await e.call("POST", "/signup", { email, password: "test123" })).status, 200);
    const again = await e.call("POST", "/signup", { email, password: "test123" });
    assertError(again, 422, "user_already_exists");
    assert.equal(again.body.msg, "User already registered");
  }),
]);

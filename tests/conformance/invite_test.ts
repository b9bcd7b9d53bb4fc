/** Cases ported from supabase/auth internal/api/invite_test.go. */
import { assert, assertError, conformance, ported } from "./_helpers.ts";

conformance("invite_test.go", { AUTHSVC_MAILER_AUTOCONFIRM: "false" }, [
  ported("TestInvite", async (e) => {
    const email = e.email();
    const r = await e.admin("POST", "/invite", { email, data: { a: 1 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.email, email);
    assert.ok(r.body.invited_at);
    const mail = await e.smtp.waitForMail(email);
    assert.match(mail.subject, /You have been invited/);
  }),
  ported("TestInviteExists", async (e) => {
    const email = e.email();
    assert.equal((await e.admin("POST", "/invite", { email, data: { a: 1 } })).status, 200);
    const again = await e.admin("POST", "/invite", { email, data: { a: 1 } });
    assert.equal(again.status, 200, again.text);
    await e.smtp.waitForMail(email);
    await e.smtp.waitForMail(email);
  }),
  ported("TestInviteExists (a confirmed address: 422 email_exists)", async (e) => {
    const u = await e.user();
    const r = await e.admin("POST", "/invite", { email: u.email });
    assertError(r, 422, "email_exists");
  }),
  ported("TestInviteAfterSignupShouldNotReturnSensitiveFields", async (e) => {
    const email = e.email();
    assert.equal((await e.admin("POST", "/invite", { email, data: { a: 1 } })).status, 200);
    const r = await e.call("POST", "/signup", { email, password: "test123", data: { a: 1 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.identities.length, 0);
    assert.equal(Object.keys(r.body.user_metadata ?? {}).length, 0);
  }),
  ported("TestInvite_WithoutAccess", async (e) => {
    const r = await e.call("POST", "/invite", { email: e.email(), data: { a: 1 } });
    assert.equal(r.status, 401, r.text);
  }),
  ported("TestVerifyInvite/Verify invite with password", async (e) => {
    const email = e.email();
    assert.equal((await e.admin("POST", "/invite", { email })).status, 200);
    const mail = await e.smtp.waitForMail(email);
    const r = await e.call("POST", "/verify", {
      email,
      type: "invite",
      token: mail.code,
      password: "testing",
    });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.access_token);
    await e.signIn({ email }, "testing");
  }),
  ported("TestVerifyInvite/Verify invite with no password", async (e) => {
    const email = e.email();
    assert.equal((await e.admin("POST", "/invite", { email })).status, 200);
    const mail = await e.smtp.waitForMail(email);
    const r = await e.call("POST", "/verify", { email, type: "invite", token: mail.code });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.access_token);
  }),
]);

/** Cases ported from supabase/auth internal/api/identity_test.go (unlinking). */
import { assert, assertError, conformance, type Env, ported } from "./_helpers.ts";

/** A user with an e-mail and a phone identity, signed in. */
async function twoIdentities(e: Env) {
  const email = e.email();
  const u = await e.user({ email, phone: e.phone() });
  assert.equal(u.identities.length, 2);
  const s = await e.signIn({ email });
  return { u, s };
}

async function unlink(e: Env, provider: "email" | "phone") {
  const { u, s } = await twoIdentities(e);
  const id = u.identities.find((i: { provider: string }) => i.provider === provider).identity_id;
  const r = await e.call("DELETE", `/user/identities/${id}`, undefined, s.access_token);
  assert.equal(r.status, 200, r.text);
  const me = await e.call("GET", "/user", undefined, s.access_token);
  assert.equal(me.body.identities.length, 1);
  assert.equal(me.body.identities[0].provider, provider === "email" ? "phone" : "email");
  const audit = await e.admin("GET", "/admin/audit?per_page=1000");
  const entry = (audit.body as { payload: { action: string; traits?: { identity_id?: string } } }[])
    .find((a) => a.payload.action === "identity_unlinked" && a.payload.traits?.identity_id === id);
  assert.ok(entry, `no identity_unlinked audit entry for ${id}`);
  return { u, s };
}

// identity_test.go turns ManualLinkingEnabled on in each case (its default is off).
const ENV = {
  AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_UNLINKED_ENABLED: "true",
  AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true",
};

conformance("identity_test.go", ENV, [
  ported(
    "TestUnlinkIdentityError/User must have at least 1 identity after unlinking",
    async (e) => {
      const s = await e.session();
      const id = s.user.identities[0].identity_id;
      const r = await e.call("DELETE", `/user/identities/${id}`, undefined, s.access_token);
      assertError(r, 422, "single_identity_not_deletable");
      assert.equal(r.body.msg, "User must have at least 1 identity after unlinking");
    },
  ),
  ported("TestUnlinkIdentityError/Identity doesn't exist", async (e) => {
    const { s } = await twoIdentities(e);
    const r = await e.call(
      "DELETE",
      `/user/identities/${crypto.randomUUID()}`,
      undefined,
      s.access_token,
    );
    assertError(r, 422, "identity_not_found");
    assert.equal(r.body.msg, "Identity doesn't exist");
  }),
  ported(
    "TestUnlinkIdentity/Unlink phone identity successfully",
    (e) => unlink(e, "phone").then(() => {}),
  ),
  ported(
    "TestUnlinkIdentity/Unlink email identity successfully",
    (e) => unlink(e, "email").then(() => {}),
  ),
  ported("TestUnlinkIdentitySendsNotificationEmailEnabled", async (e) => {
    const { u } = await unlink(e, "phone");
    const mail = await e.smtp.waitForMail(u.email);
    assert.match(mail.subject, /An identity has been unlinked/);
  }),
], { sms: true });

conformance("identity_test.go", { AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true" }, [
  ported("TestUnlinkIdentitySendsNotificationEmailDisabled", async (e) => {
    const { u } = await unlink(e, "phone");
    assert.equal((await e.call("POST", "/recover", { email: u.email })).status, 200);
    const next = await e.smtp.waitForMail(u.email);
    assert.match(next.subject, /Reset Your Password/);
  }),
], { sms: true });

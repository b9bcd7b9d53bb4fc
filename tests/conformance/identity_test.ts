/** Cases ported from supabase/auth internal/api/identity_test.go (linking and unlinking). */
import { type ProviderFake, startProviderFake } from "../helpers/provider_fakes.ts";
import { defaultUser, land, REDIRECT_URI, redirectOf } from "../server/providers/_helpers.ts";
import { assert, assertError, conformance, type Env, type J, ported } from "./_helpers.ts";

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

/** Links a GitHub identity (the provider fake's current user) to the session's user. */
async function linkGithub(e: Env, accessToken: string) {
  const fake = e.peer as ProviderFake;
  const to = await redirectOf(e.srv, "/user/identities/authorize?provider=github", {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  return await land(e.srv, await fake.approve(to.href));
}

function githubPeer() {
  return async () => {
    const fake = await startProviderFake("github", { user: defaultUser() });
    return { env: fake.env(REDIRECT_URI), peer: fake, close: () => fake.close() };
  };
}

for (const notify of [true, false]) {
  conformance("identity_test.go", {
    AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true",
    AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_LINKED_ENABLED: String(notify),
  }, [
    ...(notify
      ? [ported("TestLinkIdentityToUser", async (e) => {
        const fake = e.peer as ProviderFake;
        fake.user = defaultUser();
        const s = await e.session();
        const l = await linkGithub(e, s.access_token);
        assert.equal(l.hash.get("error"), null, l.location.href);
        const me = await e.call("GET", "/user", undefined, s.access_token);
        assert.equal(me.body.identities.length, 2);
        assert.equal(me.body.app_metadata.provider, "email");
        assert.deepEqual(me.body.app_metadata.providers, ["email", "github"]);
        const linked = me.body.identities.find((i: J) => i.provider === "github");
        assert.equal(linked.id, fake.user.id);
        const audit = await e.admin("GET", "/admin/audit?per_page=1000");
        const entries = (audit.body as J[]).filter((a) =>
          a.payload.action === "identity_linked" && a.payload.actor_id === s.user.id
        );
        assert.equal(entries.length, 1, JSON.stringify(entries));
        assert.equal(entries[0].payload.traits.identity_id, linked.identity_id);
        assert.equal(entries[0].payload.traits.provider, "github");
        assert.equal(entries[0].payload.traits.provider_id, fake.user.id);
        // the same identity again: identity_already_exists, and no second audit entry
        const again = await linkGithub(e, s.access_token);
        assert.equal(
          again.hash.get("error_code") ?? again.query.get("error_code"),
          "identity_already_exists",
          again.location.href,
        );
        const after = await e.admin("GET", "/admin/audit?per_page=1000");
        assert.equal(
          (after.body as J[]).filter((a) =>
            a.payload.action === "identity_linked" && a.payload.actor_id === s.user.id
          ).length,
          1,
        );
      })]
      : []),
    ported(
      `TestLinkIdentitySendsNotificationEmail${notify ? "Enabled" : "Disabled"}`,
      async (e) => {
        (e.peer as ProviderFake).user = defaultUser();
        const s = await e.session();
        const l = await linkGithub(e, s.access_token);
        assert.equal(l.hash.get("error"), null, l.location.href);
        if (notify) {
          const mail = await e.smtp.waitForMail(s.user.email);
          assert.match(mail.subject, /A new identity has been linked/);
          assert.match(mail.text, /github/);
        } else {
          assert.equal((await e.call("POST", "/recover", { email: s.user.email })).status, 200);
          const next = await e.smtp.waitForMail(s.user.email);
          assert.match(next.subject, /Reset Your Password/);
        }
      },
    ),
  ], { peers: githubPeer() });
}

conformance("identity_test.go", {
  AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true",
  AUTHSVC_MAILER_AUTOCONFIRM: "false",
}, [
  ported("TestUnlinkIdentityPrefersVerifiedEmail", async (e) => {
    const fake = e.peer as ProviderFake;
    const s = await e.session();
    const unverified = e.email("unverified");
    const verified = e.email("verified");
    // the unverified identity is linked first
    fake.user = defaultUser({ email: unverified, emailVerified: false });
    const a = await linkGithub(e, s.access_token);
    assert.equal(a.hash.get("error"), null, a.location.href);
    fake.user = defaultUser({ email: verified, emailVerified: true });
    const b = await linkGithub(e, s.access_token);
    assert.equal(b.hash.get("error"), null, b.location.href);
    const emailIdentity = s.user.identities.find((i: J) => i.provider === "email");
    const r = await e.call(
      "DELETE",
      `/user/identities/${emailIdentity.identity_id}`,
      undefined,
      s.access_token,
    );
    assert.equal(r.status, 200, r.text);
    const me = await e.call("GET", "/user", undefined, s.access_token);
    assert.equal(me.body.email, verified);
    assert.ok(me.body.email_confirmed_at, me.text);
  }),
], { peers: githubPeer() });

/** A confirmed e-mail user links a GitHub identity with `other` (verified or not), then unlinks the e-mail identity: the user after. */
async function promote(e: Env, verified: boolean) {
  const fake = e.peer as ProviderFake;
  const s = await e.session();
  const other = e.email("other");
  fake.user = defaultUser({ email: other, emailVerified: verified });
  const l = await linkGithub(e, s.access_token);
  assert.equal(l.hash.get("error"), null, l.location.href);
  const emailIdentity = s.user.identities.find((i: J) => i.provider === "email");
  const r = await e.call(
    "DELETE",
    `/user/identities/${emailIdentity.identity_id}`,
    undefined,
    s.access_token,
  );
  assert.equal(r.status, 200, r.text);
  const me = await e.call("GET", "/user", undefined, s.access_token);
  assert.equal(me.body.email, other);
  return me.body;
}

const VERIFICATION_CASES = [
  ["Promoting an unverified identity email unconfirms the user", false, false, false],
  ["Promoting a verified identity email keeps the user confirmed", true, false, true],
  ["Autoconfirm keeps an unverified identity email confirmed", false, true, true],
] as const;

for (const autoconfirm of [false, true]) {
  conformance("identity_test.go", {
    AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true",
    AUTHSVC_MAILER_AUTOCONFIRM: String(autoconfirm),
  }, [
    ...VERIFICATION_CASES.filter(([, , auto]) => auto === autoconfirm).map((
      [desc, verified, , confirmed],
    ) =>
      ported(`TestUnlinkIdentityEmailVerification/${desc}`, async (e) => {
        const user = await promote(e, verified);
        if (confirmed) {
          assert.ok(user.email_confirmed_at, JSON.stringify(user));
          assert.ok(user.confirmed_at);
        } else {
          assert.ok(!user.email_confirmed_at, JSON.stringify(user));
          assert.ok(!user.confirmed_at);
        }
      })
    ),
  ], { peers: githubPeer() });
}

conformance("identity_test.go", {
  AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true",
  AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_UNLINKED_ENABLED: "true",
}, [
  ported("TestUnlinkIdentitySendsNotificationToPreviousEmail", async (e) => {
    // the notice goes to the address the user had, not to the one promoted in its place
    const fake = e.peer as ProviderFake;
    const s = await e.session();
    const other = e.email("new");
    fake.user = defaultUser({ email: other, emailVerified: true });
    assert.equal((await linkGithub(e, s.access_token)).hash.get("error"), null);
    const emailIdentity = s.user.identities.find((i: J) => i.provider === "email");
    const r = await e.call(
      "DELETE",
      `/user/identities/${emailIdentity.identity_id}`,
      undefined,
      s.access_token,
    );
    assert.equal(r.status, 200, r.text);
    assert.equal((await e.call("GET", "/user", undefined, s.access_token)).body.email, other);
    const mail = await e.smtp.waitForMail(s.user.email);
    assert.match(mail.subject, /An identity has been unlinked/);
    assert.equal(e.smtp.count(other), 0);
  }),
], { peers: githubPeer() });

/**
 * Every provider but keycloak (see keycloak_test.ts) end to end against its
 * fake: /authorize sends the documented request, /callback exchanges the code
 * with the provider's client authentication, reads the user, and lands on the
 * site with a working session; the fake saw no request it would refuse. Then
 * each provider's own e-mail quirk: hidden, unverified, private relay.
 */
import assert from "node:assert/strict";
import { FAKE_PROVIDERS } from "../../helpers/provider_fakes.ts";
import {
  defaultUser,
  getUser,
  type Json,
  REDIRECT_URI,
  serverWithFakes,
  signIn,
} from "./_helpers.ts";

const DEFAULT_SCOPES: Record<string, string[]> = {
  apple: ["name", "email"],
  azure: ["openid", "email", "profile"],
  bitbucket: ["account", "email"],
  discord: ["identify", "email"],
  facebook: ["email"],
  figma: ["current_user:read"],
  github: ["user:email"],
  gitlab: ["read_user"],
  google: ["openid", "email", "profile"],
  linkedin: ["openid", "profile", "email"],
  notion: [],
  slack: ["openid", "profile", "email"],
  snapchat: ["https://auth.snapchat.com/oauth2/api/user.external_id"],
  spotify: ["user-read-email"],
  twitch: ["user:read:email"],
  twitter: ["tweet.read", "users.read", "users.email", "offline.access"],
  workos: [],
};

/** Providers whose token responses carry a refresh token in the fakes. */
const REFRESHING = new Set([
  "apple",
  "bitbucket",
  "discord",
  "figma",
  "gitlab",
  "snapchat",
  "spotify",
  "twitch",
  "twitter",
]);

/** OpenID providers whose ID tokens carry the nonce of the request. */
const NONCE = new Set(["apple", "azure", "google", "slack"]);

const APPLE_NAME = { name: { firstName: "Ada", lastName: "Lovelace" }, email: "x@y.z" };

Deno.test("every provider signs a new user in end to end and finds them again", async (t) => {
  const names = FAKE_PROVIDERS.filter((n) => n !== "spotify"); // spotify never verifies: below
  const env = await serverWithFakes(names);
  try {
    for (const name of names) {
      await t.step(name, async () => {
        const fake = env.fakes[name];
        const person = defaultUser();
        fake.user = person;
        const q = new URLSearchParams({
          provider: name,
          redirect_to: "http://localhost:3000/welcome",
        });
        if (name === "workos") q.set("connection", "conn_123");
        const res = await env.srv.fetch(`/authorize?${q}`, { redirect: "manual" });
        assert.equal(res.status, 302);
        await res.body?.cancel();
        const to = new URL(res.headers.get("location")!);
        assert.ok(to.href.startsWith(fake.url), `redirects to the provider, got ${to.href}`);
        assert.equal(to.searchParams.get("client_id"), fake.clientId);
        assert.equal(to.searchParams.get("redirect_uri"), REDIRECT_URI);
        assert.equal(to.searchParams.get("response_type"), "code");
        const scope = (to.searchParams.get("scope") ?? "").split(" ");
        for (const s of DEFAULT_SCOPES[name]) assert.ok(scope.includes(s), `${s} in ${scope}`);
        // The OpenID nonce goes to the providers that put it in their ID tokens (not LinkedIn).
        assert.equal(to.searchParams.has("nonce"), NONCE.has(name), "nonce");

        const landing = await signIn(env.srv, fake, {
          query: { redirect_to: "http://localhost:3000/welcome" },
          postUser: name === "apple" ? APPLE_NAME : undefined,
        });
        assert.deepEqual(fake.problems, []);
        assert.equal(
          landing.location.origin + landing.location.pathname,
          "http://localhost:3000/welcome",
        );
        const h = landing.hash;
        assert.equal(h.get("error"), null, h.get("error_description") ?? "");
        assert.equal(h.get("token_type"), "bearer");
        assert.equal(h.get("provider"), name);
        assert.equal(h.get("expires_in"), "3600");
        assert.ok(Number(h.get("expires_at")) > Date.now() / 1000);
        assert.ok(h.get("refresh_token"));
        assert.match(h.get("provider_token") ?? "", new RegExp(`^at-${name}-`));
        assert.equal(h.has("provider_refresh_token"), REFRESHING.has(name));

        const me = await getUser(env.srv, h.get("access_token")!);
        assert.equal(me.status, 200);
        const user = me.body;
        if (name === "snapchat") assert.equal(user.email, "");
        else assert.equal(user.email, person.email);
        if (name !== "snapchat") {
          assert.ok(user.email_confirmed_at, "the verified address is confirmed");
        }
        assert.deepEqual((user.app_metadata as Json).providers, [name]);
        assert.equal((user.user_metadata as Json).full_name, "Ada Lovelace");
        const ids = user.identities as Json[];
        assert.equal(ids.length, 1);
        assert.equal(ids[0].provider, name);
        assert.ok(String(ids[0].id).includes(person.id), `provider id ${ids[0].id}`);

        // Signing in again finds the same user through the identity.
        const again = await signIn(env.srv, fake, {
          postUser: name === "apple" ? APPLE_NAME : undefined,
        });
        assert.equal(again.hash.get("error"), null, again.hash.get("error_description") ?? "");
        const me2 = await getUser(env.srv, again.hash.get("access_token")!);
        assert.equal(me2.body.id, user.id);
        assert.equal((me2.body.identities as Json[]).length, 1);
        assert.deepEqual(fake.problems, []);
      });
    }
  } finally {
    await env.close();
  }
});

/** What each provider's e-mail quirk leads to. */
const QUIRKS: Record<string, { user: Json; expect: "needs_verification" | "no_email" | "ok" }> = {
  azure: { user: { emailVerified: false }, expect: "needs_verification" }, // no xms_edov
  bitbucket: { user: { emailVerified: false }, expect: "needs_verification" },
  discord: { user: { emailVerified: false }, expect: "needs_verification" },
  facebook: { user: { email: undefined }, expect: "no_email" }, // email permission declined
  figma: { user: { email: undefined }, expect: "no_email" },
  github: { user: { emailVerified: false }, expect: "needs_verification" },
  gitlab: { user: { emailVerified: false }, expect: "needs_verification" },
  google: { user: { emailVerified: false }, expect: "needs_verification" },
  linkedin: { user: { emailVerified: false }, expect: "needs_verification" },
  notion: { user: { email: undefined }, expect: "no_email" },
  slack: { user: { emailVerified: false }, expect: "needs_verification" },
  spotify: { user: {}, expect: "needs_verification" }, // Spotify never verifies
  twitch: { user: { emailVerified: false }, expect: "no_email" }, // helix hides it
  twitter: { user: { emailVerified: false }, expect: "no_email" }, // no confirmed_email
  workos: { user: { email: undefined }, expect: "no_email" },
};

Deno.test("hidden and unverified addresses: no session until the address is verified", async (t) => {
  const env = await serverWithFakes(Object.keys(QUIRKS));
  try {
    for (const [name, q] of Object.entries(QUIRKS)) {
      await t.step(`${name}: ${q.expect}`, async () => {
        const fake = env.fakes[name];
        fake.user = defaultUser(q.user);
        const l = await signIn(env.srv, fake);
        assert.deepEqual(fake.problems, []);
        assert.equal(l.hash.get("access_token"), null);
        assert.equal(l.hash.get("error"), "access_denied");
        assert.equal(l.query.get("error"), "access_denied", "also in the query");
        assert.equal(l.hash.get("error_code"), "provider_email_needs_verification");
        const desc = l.hash.get("error_description") ?? "";
        if (q.expect === "no_email") assert.match(desc, /did not share an e-mail address/);
        else assert.match(desc, new RegExp(`Unverified email with ${name}`));
      });
    }
  } finally {
    await env.close();
  }
});

Deno.test("apple private relay address and snapchat without any address sign in", async () => {
  const env = await serverWithFakes(["apple", "snapchat"]);
  try {
    const apple = env.fakes.apple;
    apple.user = defaultUser({ email: "abc123@privaterelay.appleid.com" });
    const l = await signIn(env.srv, apple); // no `user` posted: returning Apple users send none
    const me = await getUser(env.srv, l.hash.get("access_token")!);
    assert.equal(me.body.email, "abc123@privaterelay.appleid.com");
    const data = (me.body.identities as Json[])[0].identity_data as Json;
    assert.deepEqual(data.custom_claims, { is_private_email: true });
    assert.equal(data.full_name, undefined);

    env.fakes.snapchat.user = defaultUser({ email: undefined });
    const s = await signIn(env.srv, env.fakes.snapchat);
    const snap = await getUser(env.srv, s.hash.get("access_token")!);
    assert.equal(snap.body.email, "");
    assert.deepEqual(env.fakes.snapchat.problems, []);
  } finally {
    await env.close();
  }
});

Deno.test("MAILER_AUTOCONFIRM lets an unverified address sign up, never link to an account", async () => {
  const env = await serverWithFakes(["spotify"], { AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const fake = env.fakes.spotify;
    fake.user = defaultUser();
    const l = await signIn(env.srv, fake);
    const me = await getUser(env.srv, l.hash.get("access_token")!);
    assert.equal(me.body.email, fake.user.email);

    // Someone else claims the same address at Spotify (Spotify does not verify it).
    fake.user = defaultUser({ email: fake.user.email });
    const other = await signIn(env.srv, fake);
    assert.equal(other.hash.get("error_code"), "provider_email_needs_verification");
    const first = await getUser(env.srv, l.hash.get("access_token")!);
    assert.equal((first.body.identities as Json[]).length, 1, "not linked to the first account");
    const rows = await env.srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${env.srv.db.t("users")} WHERE email = $1`,
      [fake.user.email],
    );
    assert.equal(rows[0].n, 1, "the taken, unverified address stays with its owner");
    const all = await env.srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${env.srv.db.t("users")}`,
    );
    assert.equal(all[0].n, 1, "no user without an address, who could never sign in, was made");
  } finally {
    await env.close();
  }
});

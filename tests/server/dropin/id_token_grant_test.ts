/**
 * POST /token?grant_type=id_token (auth-js signInWithIdToken) against local
 * issuers signing real JWTs (tests/helpers/id_token_issuer.ts). Cases follow
 * GoTrue's internal/api/token_oidc_test.go (provider selection, audience,
 * nonce both-or-neither, issuer mismatch) and the account rules of the
 * redirect flow.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { type LocalIssuer, startLocalIssuer } from "../../helpers/id_token_issuer.ts";
import { authJsClient } from "../../helpers/auth_js.ts";
import {
  bearer,
  call,
  email,
  idTokenProviderEnv as providerEnv,
  signUpSession,
} from "./_helpers.ts";

/** The user object of a token answer, as far as these tests read it. */
interface ApiUser {
  id: string;
  email: string;
  email_confirmed_at?: string;
  app_metadata: { provider: string; providers: string[] };
  user_metadata: Record<string, unknown>;
  identities: { provider: string; identity_data: Record<string, unknown> }[];
}

async function sha256Hex(text: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function withIssuer(
  env: (iss: LocalIssuer) => Record<string, string>,
  fn: (srv: TestServer, iss: LocalIssuer) => Promise<void>,
) {
  const iss = await startLocalIssuer();
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true", ...env(iss) });
  try {
    await fn(srv, iss);
  } finally {
    await srv.close();
    await iss.close();
  }
}

function claims(iss: string, extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss,
    sub: `sub-${crypto.randomUUID()}`,
    aud: "ios-client",
    iat: now,
    exp: now + 600,
    ...extra,
  };
}

function idTokenGrant(srv: TestServer, body: Record<string, unknown>, token?: string) {
  return call(srv, "POST", "/token?grant_type=id_token", body, token ? bearer(token) : {});
}

Deno.test("google: an ID token signs up, then signs in the same user; keys fetched once", async () => {
  await withIssuer((i) => providerEnv("google", i.url), async (srv, iss) => {
    const nonce = crypto.randomUUID();
    const address = email("g");
    const c = claims(iss.url, {
      email: address,
      email_verified: true,
      name: "Grace Hopper",
      nonce: await sha256Hex(nonce),
    });
    const first = await idTokenGrant(srv, {
      provider: "google",
      id_token: await iss.sign(c),
      nonce,
    });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(typeof first.body.access_token, "string");
    const user = first.body.user as ApiUser;
    assert.equal(user.email, address);
    assert.ok(user.email_confirmed_at);
    assert.equal(user.app_metadata.provider, "google");
    assert.equal(user.identities[0].provider, "google");
    assert.equal(user.identities[0].identity_data.sub, c.sub);
    assert.equal(user.user_metadata.full_name, "Grace Hopper");
    // the same Google account again (a second client id, ES256): the same user
    const again = await idTokenGrant(srv, {
      provider: "google",
      id_token: await iss.sign({ ...c, aud: "web-client", nonce: undefined }, { alg: "ES256" }),
    });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal((again.body.user as Record<string, unknown>).id, user.id);
    assert.equal(iss.jwksFetches, 1, "the key set is cached");
    // the access token opens GET /user
    const me = await call(
      srv,
      "GET",
      "/user",
      undefined,
      bearer(again.body.access_token as string),
    );
    assert.equal(me.status, 200);
    assert.deepEqual((me.body.app_metadata as Record<string, unknown>).providers, ["google"]);
  });
});

Deno.test("auth-js signInWithIdToken works against the server", async () => {
  await withIssuer((i) => providerEnv("google", i.url), async (srv, iss) => {
    const nonce = "raw-nonce-from-the-app";
    const address = email("authjs");
    const token = await iss.sign(
      claims(iss.url, { email: address, email_verified: true, nonce: await sha256Hex(nonce) }),
    );
    const client = authJsClient(srv.url);
    const { data, error } = await client.signInWithIdToken({ provider: "google", token, nonce });
    assert.equal(error, null);
    assert.equal(data.user?.email, address);
    assert.ok(data.session?.access_token);
    const { data: got } = await client.getUser();
    assert.equal(got.user?.id, data.user?.id);
  });
});

Deno.test("refused ID tokens: each answer names what was wrong", async () => {
  await withIssuer((i) => providerEnv("google", i.url), async (srv, iss) => {
    const base = claims(iss.url, { email: email(), email_verified: true });
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["wrong audience", { id_token: await iss.sign({ ...base, aud: "someone-else" }) }, /aud/],
      [
        "expired",
        { id_token: await iss.sign({ ...base, iat: now - 7200, exp: now - 3600 }) },
        /expired/,
      ],
      ["forged", { id_token: await iss.signForged(base) }, /signature/],
      [
        "wrong issuer",
        { id_token: await iss.sign({ ...base, iss: "https://evil.example" }) },
        /iss/,
      ],
      ["nonce missing in request", {
        id_token: await iss.sign({ ...base, nonce: await sha256Hex("n") }),
      }, /nonce/i],
      ["nonce only in request", { id_token: await iss.sign(base), nonce: "n" }, /nonce/i],
      ["nonce mismatch", {
        id_token: await iss.sign({ ...base, nonce: await sha256Hex("n") }),
        nonce: "other",
      }, /Nonces mismatch/],
      ["at_hash mismatch", {
        id_token: await iss.sign({ ...base, at_hash: "AAAAAAAAAAAAAAAAAAAAAA" }),
        access_token: "ya29.some-access-token",
      }, /at_hash/],
      ["issuer param differs", {
        id_token: await iss.sign(base),
        issuer: "https://accounts.google.com",
      }, /issuer/],
      ["not a JWT", { id_token: "not-a-jwt" }, /Bad ID token/],
    ];
    for (const [what, body, msg] of cases) {
      const r = await idTokenGrant(srv, { provider: "google", ...body });
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error_code, "validation_failed", what);
      assert.match(r.body.msg as string, msg, `${what}: ${r.body.msg}`);
    }
    let r = await idTokenGrant(srv, { provider: "google" });
    assert.equal(r.status, 400);
    assert.match(r.body.msg as string, /id_token is required/);
    r = await idTokenGrant(srv, { id_token: await iss.sign(base) });
    assert.equal(r.status, 400);
    assert.match(r.body.msg as string, /provider/);
    r = await idTokenGrant(srv, { provider: "github", id_token: await iss.sign(base) });
    assert.equal(r.status, 400);
    assert.match(r.body.msg as string, /cannot sign in with an ID token/);
    r = await idTokenGrant(srv, { provider: "apple", id_token: await iss.sign(base) });
    assert.equal(r.status, 400);
    assert.equal(r.body.error_code, "provider_disabled");
  });
});

async function withIssuerEnv(
  extra: Record<string, string>,
  fn: (srv: TestServer, iss: LocalIssuer) => Promise<void>,
) {
  await withIssuer((i) => ({ ...providerEnv("google", i.url), ...extra }), fn);
}

Deno.test("key rotation: the new key is accepted, the retired one refused (cooldown 0)", async () => {
  await withIssuerEnv({ AUTHSVC_EXTERNAL_JWKS_COOLDOWN: "0" }, async (srv, iss) => {
    const base = claims(iss.url, { email: email("rot"), email_verified: true });
    const before = await idTokenGrant(srv, { provider: "google", id_token: await iss.sign(base) });
    assert.equal(before.status, 200, JSON.stringify(before.body));
    assert.equal(iss.jwksFetches, 1);
    await iss.rotate({ retire: true });
    // a token of the new key: its kid is unknown to the cache, the set is fetched again
    const after = await idTokenGrant(srv, { provider: "google", id_token: await iss.sign(base) });
    assert.equal(after.status, 200, JSON.stringify(after.body));
    assert.equal(iss.jwksFetches, 2);
    assert.equal(
      (after.body.user as ApiUser).id,
      (before.body.user as ApiUser).id,
      "the same account",
    );
    // the retired key is no longer in the set the server holds
    const old = await idTokenGrant(srv, {
      provider: "google",
      id_token: await iss.sign(base, { previous: true }),
    });
    assert.equal(old.status, 400, JSON.stringify(old.body));
    assert.equal(old.body.error_code, "validation_failed");
    assert.match(old.body.msg as string, /no matching key/);
  });
});

Deno.test("key rotation: within the cooldown an unknown key is not fetched", async () => {
  await withIssuerEnv({ AUTHSVC_EXTERNAL_JWKS_COOLDOWN: "1h" }, async (srv, iss) => {
    const base = claims(iss.url, { email: email("cool"), email_verified: true });
    const first = await idTokenGrant(srv, { provider: "google", id_token: await iss.sign(base) });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    await iss.rotate({ retire: true });
    const r = await idTokenGrant(srv, { provider: "google", id_token: await iss.sign(base) });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.msg as string, /no matching key/);
    assert.equal(iss.jwksFetches, 1, "no refetch within the cooldown");
  });
});

Deno.test("a verified address links to the existing account; an unverified one does not", async () => {
  await withIssuer((i) => providerEnv("google", i.url), async (srv, iss) => {
    const address = email("link");
    const s = await signUpSession(srv, address);
    const userId = (s.user as Record<string, unknown>).id;
    const unverified = await idTokenGrant(srv, {
      provider: "google",
      id_token: await iss.sign(claims(iss.url, { email: address, email_verified: false })),
    });
    assert.equal(unverified.status, 422, JSON.stringify(unverified.body));
    assert.equal(unverified.body.error_code, "provider_email_needs_verification");
    const verified = await idTokenGrant(srv, {
      provider: "google",
      id_token: await iss.sign(claims(iss.url, { email: address, email_verified: true })),
    });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    const user = verified.body.user as ApiUser;
    assert.equal(user.id, userId);
    assert.deepEqual(user.identities.map((i: { provider: string }) => i.provider).sort(), [
      "email",
      "google",
    ]);
  });
});

Deno.test("link_identity links the ID token's identity to the signed-in user", async () => {
  // Behind the gates of manual linking (tests/server/security/id_token_link_test.ts).
  const env = (i: LocalIssuer) => ({
    ...providerEnv("google", i.url),
    AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true",
  });
  await withIssuer(env, async (srv, iss) => {
    const s = await signUpSession(srv, email("me"));
    const token = await iss.sign(claims(iss.url, { email: email("other"), email_verified: true }));
    const anon = await idTokenGrant(srv, {
      provider: "google",
      id_token: token,
      link_identity: true,
    });
    assert.equal(anon.status, 401);
    const r = await idTokenGrant(
      srv,
      { provider: "google", id_token: token, link_identity: true },
      s.access_token,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const user = r.body.user as ApiUser;
    assert.equal(user.id, (s.user as Record<string, unknown>).id);
    assert.equal(user.identities.length, 2);
  });
});

Deno.test("apple, azure, keycloak and facebook ID tokens sign in", async () => {
  await withIssuer((i) => ({
    ...providerEnv("apple", i.url, "com.example.app"),
    ...providerEnv("azure", `${i.url}/common`, "azure-app"),
    ...providerEnv("keycloak", `${i.url}/realms/demo`, "kc-app"),
    ...providerEnv("facebook", i.url, "fb-app"),
  }), async (srv, iss) => {
    const tid = crypto.randomUUID();
    const cases: [string, Record<string, unknown>][] = [
      [
        "apple",
        claims(iss.url, {
          aud: "com.example.app",
          email: email("a"),
          email_verified: "true",
          is_private_email: "false",
        }),
      ],
      [
        "azure",
        claims(`${iss.url}/${tid}/v2.0`, {
          aud: "azure-app",
          tid,
          email: email("z"),
          xms_edov: true,
          name: "Ada",
        }),
      ],
      [
        "keycloak",
        claims(`${iss.url}/realms/demo`, {
          aud: "kc-app",
          email: email("k"),
          email_verified: true,
          groups: ["staff"],
        }),
      ],
      [
        "facebook",
        claims(iss.url, { aud: "fb-app", email: email("f"), nonce: "limited-login-nonce" }),
      ],
    ];
    for (const [provider, c] of cases) {
      const r = await idTokenGrant(srv, {
        provider,
        id_token: await iss.sign(c),
        ...(provider === "facebook" ? { nonce: "limited-login-nonce" } : {}),
      });
      assert.equal(r.status, 200, `${provider}: ${JSON.stringify(r.body)}`);
      const user = r.body.user as ApiUser;
      assert.equal(user.email, c.email, provider);
      assert.equal(user.identities[0].provider, provider);
      assert.equal(user.identities[0].identity_data.sub, c.sub);
    }
    // the provider may also be named by its issuer, as GoTrue allows
    const byIssuer = await idTokenGrant(srv, {
      issuer: `${iss.url}/realms/demo`,
      id_token: await iss.sign(
        claims(`${iss.url}/realms/demo`, {
          aud: "kc-app",
          email: email("k2"),
          email_verified: true,
        }),
      ),
    });
    assert.equal(byIssuer.status, 200, JSON.stringify(byIssuer.body));
  });
});

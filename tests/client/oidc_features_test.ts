/**
 * Beyond the gem, against a real OpenID provider (oidc-provider): discovery,
 * ID token validation (token.idTokenClaims), UserInfo, introspection,
 * pushed authorization requests, opt-in auto-refresh. JWKS caching and key
 * rotation, and each claim check, are tested with ID tokens signed here
 * (jose, test-only) against a JWKS served by a local stub.
 */
import assert from "node:assert/strict";
import * as jose from "jose";
import { AccessToken, Client, generatePkce, OAuthError } from "../../mod.ts";
import {
  idTokenVerifier,
  introspect,
  pushAuthorizationRequest,
  userinfo,
  validateIdToken,
} from "../../oidc.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";
import { json, startStub } from "./_stub.ts";

const REDIRECT = "http://127.0.0.1:9/callback";
const SECRET = "web-secret-5f2a9c0d8e7b";

function provider() {
  return startOidcProvider({
    clients: [{
      client_id: "web",
      client_secret: SECRET,
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
    }],
    configuration: {
      features: {
        devInteractions: { enabled: true },
        clientCredentials: { enabled: true },
        revocation: { enabled: true, allowedPolicy: () => true },
        introspection: { enabled: true },
        userinfo: { enabled: true },
        pushedAuthorizationRequests: { enabled: true },
      },
    },
  });
}

Deno.test("oidc-provider: discovery, ID token, UserInfo, introspection, PAR, auto-refresh", async (t) => {
  await using op = await provider();
  const tokenRequests: string[] = [];
  const client = await Client.discover(op.issuer, "web", SECRET, {
    redirectUri: REDIRECT,
    verifyToken: idTokenVerifier({ required: true }),
    connectionBuild: (b) =>
      void b.use((req, next) => {
        if (new URL(req.url).pathname === "/token") tokenRequests.push(req.method);
        return next(req);
      }),
  });

  await t.step("Client.discover fills the endpoints and checks the issuer", async () => {
    assert.equal(client.tokenUrl(), op.endpoints.token);
    assert.equal(client.authorizeUrl({ a: "1" }).split("?")[0], op.endpoints.authorization);
    assert.equal(client.revokeUrl(), op.endpoints.revocation);
    assert.equal(client.options.issuer, op.issuer);
    assert.equal(client.options.jwksUri, op.endpoints.jwks);
    assert.equal(client.options.userinfoUrl, op.endpoints.userinfo);
    assert.equal(client.options.introspectionUrl, op.endpoints.introspection);
    assert.ok(client.options.parUrl?.startsWith(op.issuer));
    await assert.rejects(Client.discover(`${op.issuer}/`, "web", SECRET), (e: unknown) => {
      assert.ok(e instanceof OAuthError);
      assert.equal(e.code, "invalid_issuer");
      return true;
    });
  });

  let token!: AccessToken;
  await t.step("authorization code: the ID token is validated, claims on the token", async () => {
    const pkce = await generatePkce();
    const nonce = crypto.randomUUID();
    const url = client.authCode.authorizeUrl({
      scope: "openid email offline_access",
      nonce,
      prompt: "consent",
      code_challenge: pkce.codeChallenge,
      code_challenge_method: "S256",
    });
    const { code } = await op.login(url, { login: "alice" });
    token = await client.authCode.getToken(code, {
      code_verifier: pkce.codeVerifier,
      idToken: { nonce },
    });
    assert.equal(token.idTokenClaims?.sub, "alice");
    assert.equal(token.idTokenClaims?.nonce, nonce);
    assert.equal(token.idTokenClaims?.aud, "web");
    assert.equal(token.idTokenClaims?.iss, op.issuer);
    // the same ID token with a nonce we did not send is refused
    await assert.rejects(
      validateIdToken(client, token.params.id_token as string, { nonce: "other" }),
      (e: unknown) =>
        e instanceof OAuthError && e.code === "invalid_id_token" && /nonce/.test(e.message),
    );
    // a tampered payload fails the signature
    const [h, p, s] = (token.params.id_token as string).split(".");
    const claims = JSON.parse(atob(p.replace(/-/g, "+").replace(/_/g, "/")));
    const forged = btoa(JSON.stringify({ ...claims, sub: "mallory" })).replace(/=+$/, "")
      .replace(/\+/g, "-").replace(/\//g, "_");
    await assert.rejects(
      validateIdToken(client, `${h}.${forged}.${s}`),
      /signature does not verify/,
    );
    // (oidc-provider sends no at_hash from the token endpoint: at_hash/c_hash are tested below)
  });

  await t.step(
    "UserInfo: claims of the token's user, sub checked against the ID token",
    async () => {
      const claims = await userinfo(token);
      assert.equal(claims.sub, "alice");
      assert.equal(claims.email, "alice@example.test");
      const forged = new AccessToken(client, token.token);
      forged.idTokenClaims = { sub: "bob" };
      await assert.rejects(userinfo(forged), /invalid_userinfo/);
    },
  );

  await t.step("introspection (RFC 7662): active, then inactive after revocation", async () => {
    const info = await introspect(client, token.token, "access_token");
    assert.equal(info.active, true);
    assert.equal(info.client_id, "web");
    assert.equal(info.sub, "alice");
    const refreshInfo = await introspect(client, token.refreshToken!, "refresh_token");
    assert.equal(refreshInfo.active, true);
    const bad = new Client("web", "wrong-secret", { introspectionUrl: op.endpoints.introspection });
    await assert.rejects(
      introspect(bad, token.token),
      (e: unknown) => e instanceof OAuthError && e.code === "invalid_client",
    );
  });

  await t.step(
    "auto-refresh: an expired token refreshes once for concurrent requests",
    async () => {
      const refreshed: AccessToken[] = [];
      const auto = await Client.discover(op.issuer, "web", SECRET, {
        verifyToken: idTokenVerifier(),
        autoRefresh: true,
        onRefresh: (t) => void refreshed.push(t),
        connectionBuild: (b) =>
          void b.use((req, next) => {
            if (new URL(req.url).pathname === "/token") tokenRequests.push(`auto ${req.method}`);
            return next(req);
          }),
      });
      const expired = AccessToken.fromHash(auto, {
        ...token.toHash(),
        expires_at: Math.floor(Date.now() / 1000) - 10,
      });
      const before = expired.token;
      assert.equal(expired.expired(), true);
      const [a, b, c] = await Promise.all([
        expired.get(op.endpoints.resource),
        expired.get(op.endpoints.resource),
        expired.get(op.endpoints.userinfo),
      ]);
      assert.deepEqual([a.status, b.status, c.status], [200, 200, 200]);
      assert.equal(tokenRequests.filter((r) => r.startsWith("auto")).length, 1, "one refresh");
      assert.equal(refreshed.length, 1, "onRefresh called once");
      assert.equal(refreshed[0], expired, "updated in place");
      assert.notEqual(expired.token, before);
      assert.equal(expired.expired(), false);
      assert.equal(expired.idTokenClaims?.sub, "alice");
      // without autoRefresh nothing is refreshed
      const plain = AccessToken.fromHash(client, { ...expired.toHash(), expires_at: 1 });
      const n = tokenRequests.length;
      await plain.get(op.endpoints.resource);
      assert.equal(tokenRequests.length, n);
    },
  );

  await t.step("revocation makes introspection inactive", async () => {
    await token.revoke();
    assert.equal((await introspect(client, token.token)).active, false);
  });

  await t.step("pushed authorization request (RFC 9126)", async () => {
    const pkce = await generatePkce();
    const nonce = crypto.randomUUID();
    const par = await pushAuthorizationRequest(client, {
      scope: "openid",
      nonce,
      state: "par-state",
      code_challenge: pkce.codeChallenge,
      code_challenge_method: "S256",
    });
    const url = new URL(par.url);
    assert.deepEqual([...url.searchParams.keys()].sort(), ["client_id", "request_uri"]);
    assert.ok(par.requestUri.startsWith("urn:ietf:params:oauth:request_uri:"));
    const { code, state } = await op.login(par.url, { login: "carol", redirectUri: REDIRECT });
    assert.equal(state, "par-state");
    const t2 = await client.authCode.getToken(code, {
      code_verifier: pkce.codeVerifier,
      idToken: { nonce },
    });
    assert.equal(t2.idTokenClaims?.sub, "carol");
    await assert.rejects(
      pushAuthorizationRequest(new Client("web", "wrong", { parUrl: client.options.parUrl }), {}),
      (e: unknown) => e instanceof OAuthError && e.code === "invalid_client",
    );
  });
});

// ---------------------------------------------------------------- claim checks, JWKS cache and rotation
async function keyPair(kid: string) {
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true });
  return {
    kid,
    privateKey,
    jwk: { ...(await jose.exportJWK(publicKey)), kid, alg: "ES256", use: "sig" },
  };
}

Deno.test("ID token checks: JWKS cached, fetched again for a rotated key; iss, aud, azp, exp/iat skew, nonce, auth_time, at_hash, c_hash", async () => {
  const k1 = await keyPair("k1");
  const k2 = await keyPair("k2");
  let served = [k1.jwk];
  await using jwks = startStub(() => json({ keys: served }));
  const issuer = "https://op.example.test";
  const client = new Client("app", "s", { issuer, jwksUri: `${jwks.url}/jwks` });
  const now = Math.floor(Date.now() / 1000);
  const sign = (
    k: typeof k1,
    claims: Record<string, unknown>,
    header: Record<string, unknown> = {},
  ) =>
    new jose.SignJWT({ iss: issuer, aud: "app", sub: "u1", iat: now, exp: now + 300, ...claims })
      .setProtectedHeader({ alg: "ES256", kid: k.kid, ...header })
      .sign(k.privateKey);

  assert.equal((await validateIdToken(client, await sign(k1, {}))).sub, "u1");
  assert.equal((await validateIdToken(client, await sign(k1, { sub: "u2" }))).sub, "u2");
  assert.equal(jwks.requests.length, 1, "the JWKS is cached");

  served = [k2.jwk]; // rotation
  assert.equal((await validateIdToken(client, await sign(k2, {}))).sub, "u1");
  assert.equal(jwks.requests.length, 2, "fetched again for the new kid");
  await assert.rejects(
    validateIdToken(client, await sign(k1, {})),
    /no key in the JWKS matches kid "k1"/,
  );

  const refused = async (claims: Record<string, unknown>, re: RegExp, opts = {}) =>
    await assert.rejects(validateIdToken(client, await sign(k2, claims), opts), (e: unknown) => {
      assert.ok(e instanceof OAuthError, String(e));
      assert.equal(e.code, "invalid_id_token");
      assert.match(e.message, re);
      return true;
    });
  await refused({ iss: "https://evil.example" }, /iss/);
  await refused({ aud: "other" }, /aud/);
  await refused({ aud: ["app", "other"] }, /azp/);
  assert.equal(
    (await validateIdToken(client, await sign(k2, { aud: ["app", "other"], azp: "app" }))).azp,
    "app",
  );
  await refused({ azp: "other" }, /azp/);
  await refused({ exp: now - 120 }, /expired/);
  assert.ok(
    await validateIdToken(client, await sign(k2, { exp: now - 30 })),
    "within the default skew of 60 s",
  );
  await refused({ exp: now - 30 }, /expired/, { clockSkew: 0 });
  await refused({ iat: now + 600 }, /iat/);
  await refused({ iat: undefined }, /iat/);
  await refused({}, /nonce/, { nonce: "n-1" });
  assert.ok(await validateIdToken(client, await sign(k2, { nonce: "n-1" }), { nonce: "n-1" }));
  await refused({}, /auth_time/, { maxAge: 60 });
  await refused({ auth_time: now - 3600 }, /max_age/, { maxAge: 60 });
  const half = async (v: string) => {
    const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(v)));
    return jose.base64url.encode(d.subarray(0, 16));
  };
  assert.ok(
    await validateIdToken(client, await sign(k2, { at_hash: await half("at-1") }), {
      accessToken: "at-1",
    }),
  );
  await refused({ at_hash: await half("at-1") }, /at_hash/, { accessToken: "at-2" });
  await refused({ c_hash: await half("code-1") }, /c_hash/, { code: "code-2" });
  await assert.rejects(validateIdToken(client, "a.b"), /compact JWS/);
  const none = `${jose.base64url.encode('{"alg":"none"}')}.${
    jose.base64url.encode('{"sub":"x"}')
  }.`;
  await assert.rejects(validateIdToken(client, none), /alg "none" is not accepted/);
});

Deno.test("Client.discover falls back to RFC 8414 metadata (issuer with a path)", async () => {
  await using as = startStub((req, stub) =>
    req.url.pathname === "/.well-known/oauth-authorization-server/tenant"
      ? json({
        issuer: `${stub.url}/tenant`,
        authorization_endpoint: `${stub.url}/tenant/authorize`,
        token_endpoint: `${stub.url}/tenant/token`,
      })
      : json({ error: "not_found" }, 404)
  );
  const client = await Client.discover(`${as.url}/tenant`, "app", "s");
  assert.equal(client.tokenUrl(), `${as.url}/tenant/token`);
  assert.equal(client.options.issuer, `${as.url}/tenant`);
  assert.deepEqual(as.requests.map((r) => r.url.pathname), [
    "/tenant/.well-known/openid-configuration",
    "/.well-known/oauth-authorization-server/tenant",
  ]);
  await assert.rejects(Client.discover(`${as.url}/other`, "app", "s"), /discovery_failed/);
});

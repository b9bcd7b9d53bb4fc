/**
 * The library against a real authorization server (oidc-provider on
 * 127.0.0.1): every grant it offers, each client authentication, refresh,
 * revocation and calls to a protected resource.
 */
import assert from "node:assert/strict";
import { Client, ConnectionError, generatePkce, type Jwk, OAuthError } from "../../mod.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";

const REDIRECT = "http://127.0.0.1:9/callback";

async function rsaKeyPair(): Promise<{ privateJwk: Jwk; publicJwk: Jwk }> {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const privateJwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const publicJwk = await crypto.subtle.exportKey("jwk", pair.publicKey);
  return {
    privateJwk: { ...privateJwk, kid: "k1" },
    publicJwk: { kty: publicJwk.kty, n: publicJwk.n, e: publicJwk.e, kid: "k1", alg: "RS256" },
  };
}

Deno.test("oidc-provider: every grant and client authentication", async (t) => {
  const { privateJwk, publicJwk } = await rsaKeyPair();
  await using op = await startOidcProvider({
    clients: [
      {
        client_id: "web",
        client_secret: "web-secret-5f2a9c0d8e7b",
        redirect_uris: [REDIRECT],
        grant_types: ["authorization_code", "refresh_token"],
        token_endpoint_auth_method: "client_secret_basic",
      },
      {
        client_id: "post-app",
        client_secret: "post-secret-19ab7c3e",
        redirect_uris: [REDIRECT],
        grant_types: ["authorization_code", "refresh_token"],
        token_endpoint_auth_method: "client_secret_post",
      },
      {
        client_id: "service",
        client_secret: "service-secret-aa93bd01",
        grant_types: ["client_credentials"],
        scope: "api:read api:write",
      },
      {
        client_id: "jwt-service",
        grant_types: ["client_credentials"],
        token_endpoint_auth_method: "private_key_jwt",
        jwks: { keys: [publicJwk] },
        scope: "api:read",
      },
    ],
  });

  await t.step("authorization code with PKCE, userinfo, resource, refresh, revoke", async () => {
    const client = new Client("web", "web-secret-5f2a9c0d8e7b", {
      site: op.issuer,
      authorizeUrl: "/auth",
      tokenUrl: "/token",
      revokeUrl: "/token/revocation",
      redirectUri: REDIRECT,
    });
    const pkce = await generatePkce();
    const url = client.authCode.authorizeUrl({
      scope: "openid email offline_access",
      state: "st-1",
      code_challenge: pkce.codeChallenge,
      code_challenge_method: pkce.codeChallengeMethod,
    });
    const { code, state } = await op.login(url, { login: "alice" });
    assert.equal(state, "st-1");
    const token = await client.authCode.getToken(code, { code_verifier: pkce.codeVerifier });
    assert.ok(token.token.length > 20);
    assert.ok(token.refreshToken);
    assert.equal(token.params.token_type, "Bearer");
    assert.ok(typeof token.params.id_token === "string");
    assert.equal(token.expired(), false);
    assert.ok(token.expiresAt! > Date.now() / 1000);

    const me = await token.get(op.endpoints.userinfo);
    assert.equal(me.status, 200);
    assert.equal((me.parsed as { sub: string }).sub, "alice");
    assert.equal((me.parsed as { email: string }).email, "alice@example.test");

    const resource = await token.get("/resource");
    assert.equal((resource.parsed as { sub: string }).sub, "alice");

    const refreshed = await token.refresh();
    assert.notEqual(refreshed.token, token.token);
    assert.equal(refreshed.refreshToken, token.refreshToken, "refresh token carried over");
    assert.equal((await refreshed.get("/resource")).status, 200);

    const revoked = await refreshed.revoke();
    assert.equal(revoked.status, 200);
    await assert.rejects(refreshed.get("/resource"), (e: unknown) => {
      assert.ok(e instanceof OAuthError);
      assert.equal(e.response.status, 401);
      assert.equal(e.code, "invalid_token");
      return true;
    });
  });

  await t.step("a wrong PKCE verifier is refused with invalid_grant", async () => {
    const client = new Client("web", "web-secret-5f2a9c0d8e7b", {
      site: op.issuer,
      authorizeUrl: "/auth",
      tokenUrl: "/token",
      redirectUri: REDIRECT,
    });
    const pkce = await generatePkce();
    const url = client.authCode.authorizeUrl({
      scope: "openid",
      code_challenge: pkce.codeChallenge,
      code_challenge_method: "S256",
    });
    const { code } = await op.login(url);
    const other = await generatePkce();
    await assert.rejects(
      client.authCode.getToken(code, { code_verifier: other.codeVerifier }),
      (e: unknown) => e instanceof OAuthError && e.code === "invalid_grant" && !!e.description,
    );
  });

  await t.step("client_secret_post (request_body)", async () => {
    const client = new Client("post-app", "post-secret-19ab7c3e", {
      site: op.issuer,
      authorizeUrl: "auth",
      tokenUrl: "token",
      authScheme: "request_body",
    });
    const pkce = await generatePkce();
    const url = client.authCode.authorizeUrl({
      redirect_uri: REDIRECT,
      scope: "openid",
      code_challenge: pkce.codeChallenge,
      code_challenge_method: "S256",
    });
    const { code } = await op.login(url, { login: "bob" });
    const token = await client.authCode.getToken(code, {
      redirect_uri: REDIRECT,
      code_verifier: pkce.codeVerifier,
    });
    assert.equal(((await token.get(op.endpoints.userinfo)).parsed as { sub: string }).sub, "bob");
  });

  await t.step("client credentials, token in header, query and body", async () => {
    const client = new Client("service", "service-secret-aa93bd01", {
      site: op.issuer,
      tokenUrl: "/token",
    });
    const token = await client.clientCredentials.getToken({ scope: "api:read" });
    assert.equal(token.params.scope, "api:read");
    assert.equal(token.refreshToken, undefined);
    const viaHeader = await token.get("/resource");
    assert.deepEqual(
      [viaHeader.parsed as Record<string, unknown>].map((p) => [p.client_id, p.scope]),
      [["service", "api:read"]],
    );
    token.options.mode = { get: "query", post: "body" };
    assert.equal((await token.get("/resource")).status, 200);
    const viaBody = await token.post("/resource", { body: { x: "1" } });
    assert.equal((viaBody.parsed as { method: string }).method, "POST");
  });

  await t.step(
    "client credentials with a wrong secret: invalid_client, secret not shown",
    async () => {
      const client = new Client("service", "wrong-secret-7c1d2e3f4a5b", {
        site: op.issuer,
        tokenUrl: "/token",
      });
      await assert.rejects(client.clientCredentials.getToken(), (e: unknown) => {
        assert.ok(e instanceof OAuthError);
        assert.equal(e.code, "invalid_client");
        assert.equal(e.response.status, 401);
        assert.ok(!e.message.includes("wrong-secret-7c1d2e3f4a5b"));
        return true;
      });
    },
  );

  await t.step("private_key_jwt: the library signs the client assertion", async () => {
    const client = new Client("jwt-service", "", {
      site: op.issuer,
      tokenUrl: "/token",
      authScheme: "private_key_jwt",
      clientAssertionKey: privateJwk,
      clientAssertionAlg: "RS256",
    });
    const token = await client.clientCredentials.getToken({ scope: "api:read" });
    assert.equal(
      ((await token.get("/resource")).parsed as { client_id: string }).client_id,
      "jwt-service",
    );
    // a second token request reuses the imported key and a fresh jti (replays are refused)
    const again = await client.clientCredentials.getToken({ scope: "api:read" });
    assert.notEqual(again.token, token.token);
  });

  await t.step(
    "private_key_jwt with a key the provider does not know: invalid_client",
    async () => {
      const stranger = await rsaKeyPair();
      const client = new Client("jwt-service", "", {
        site: op.issuer,
        tokenUrl: "/token",
        authScheme: "private_key_jwt",
        clientAssertionKey: stranger.privateJwk,
      });
      await assert.rejects(
        client.clientCredentials.getToken({ scope: "api:read" }),
        (e: unknown) => e instanceof OAuthError && e.code === "invalid_client",
      );
    },
  );

  await t.step("the provider gone: ConnectionError names the URL, not the secret", async () => {
    const client = new Client("service", "service-secret-aa93bd01", {
      site: "http://127.0.0.1:1",
      tokenUrl: "/token",
      authScheme: "request_body",
    });
    await assert.rejects(client.clientCredentials.getToken(), (e: unknown) => {
      assert.ok(e instanceof ConnectionError);
      assert.equal(e.kind, "network");
      assert.match(e.message, /POST http:\/\/127\.0\.0\.1:1\/token failed: /);
      assert.ok(!e.message.includes("service-secret-aa93bd01"));
      assert.ok(!String((e.cause as Error)?.message).includes("service-secret-aa93bd01"));
      return true;
    });
  });
});

/**
 * A resource server validating JWT access tokens (RFC 9068) with
 * `jwtAccessTokenVerifier`: tokens issued by oidc-provider (resource
 * indicators with `accessTokenFormat: "jwt"`), Bearer and DPoP-bound, sent
 * by the library's own client to a resource on Deno.serve.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as jose from "jose";
import { AccessToken, Client, OAuthError } from "../../mod.ts";
import { createDpop, jwtAccessTokenVerifier, type VerifyAccessToken } from "../../oidc.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";

const API = "https://api.example.test";
const SECRET = "svc-secret-0a9b8c7d6e";

async function provider() {
  return await startOidcProvider({
    clients: [{
      client_id: "svc",
      client_secret: SECRET,
      grant_types: ["client_credentials"],
      scope: "api:read",
    }],
    configuration: {
      features: {
        clientCredentials: { enabled: true },
        dPoP: {
          enabled: true,
          nonceSecret: Buffer.from(crypto.getRandomValues(new Uint8Array(32))),
        },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => API,
          useGrantedResource: () => true,
          getResourceServerInfo: () => ({
            scope: "api:read",
            audience: API,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "RS256" } },
          }),
        },
      },
    },
  });
}

/** A resource on Deno.serve that answers with the token's claims, or the verifier's 401. */
function resource(verify: VerifyAccessToken) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    try {
      const claims = await verify(req);
      return Response.json({ client_id: claims.client_id, scope: claims.scope });
    } catch (e) {
      if (e instanceof OAuthError) return e.response.response;
      throw e;
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/orders`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("RFC 9068: oidc-provider's JWT access tokens, validated with a cached JWKS", async () => {
  await using op = await provider();
  const fetched: string[] = [];
  const countingFetch: typeof fetch = (input, init) => {
    fetched.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
    return fetch(input, init);
  };
  const verify = jwtAccessTokenVerifier({ issuer: op.issuer, audience: API, fetch: countingFetch });
  await using rs = resource(verify);
  const client = await Client.discover(op.issuer, "svc", SECRET);
  const token = await client.clientCredentials.getToken({ scope: "api:read", resource: API });
  assert.equal(jose.decodeProtectedHeader(token.token).typ, "at+jwt");

  const res = await token.get(rs.url);
  assert.deepEqual(res.parsedHash, { client_id: "svc", scope: "api:read" });
  await token.get(rs.url);
  assert.equal(fetched.filter((p) => p === "/jwks").length, 1, "the JWKS is fetched once");

  // what the resource refuses, with a 401 and WWW-Authenticate
  const refusal = async (t: AccessToken, pattern: RegExp) => {
    const r = await t.get(rs.url, { raiseErrors: false });
    assert.equal(r.status, 401);
    assert.match(r.headers.get("www-authenticate")!, /^Bearer error="invalid_token"/);
    assert.match(String(r.parsedHash?.error_description), pattern);
  };
  const [h, p, s] = token.token.split(".");
  const claims = JSON.parse(Buffer.from(p, "base64url").toString());
  const forged = Buffer.from(JSON.stringify({ ...claims, scope: "api:admin" })).toString(
    "base64url",
  );
  await refusal(new AccessToken(client, `${h}.${forged}.${s}`), /signature does not verify/);
  await refusal(new AccessToken(client, "opaque-token-value"), /not a compact JWS/);

  // a token for another resource is refused by this one
  const elsewhere = jwtAccessTokenVerifier({ issuer: op.issuer, audience: "https://other.test" });
  await assert.rejects(
    elsewhere(token.token),
    /aud "https:\/\/api\.example\.test" is not this resource/,
  );
  const otherIssuer = jwtAccessTokenVerifier({
    issuer: "https://x.test",
    audience: API,
    jwksUri: op.endpoints.jwks,
  });
  await assert.rejects(otherIssuer(token.token), /iss/);

  // a token naming an unknown key makes one more JWKS fetch (rotation), then fails
  const { privateKey } = await jose.generateKeyPair("RS256");
  const now = Math.floor(Date.now() / 1000);
  const stranger = await new jose.SignJWT({ ...claims, iat: now, exp: now + 60 })
    .setProtectedHeader({ alg: "RS256", typ: "at+jwt", kid: "not-published" })
    .sign(privateKey);
  await assert.rejects(verify(stranger), /no key in the JWKS matches kid "not-published"/);
  assert.equal(fetched.filter((p) => p === "/jwks").length, 2);
  // an ID-token-typed JWT is not an access token
  const idLike = await new jose.SignJWT({ ...claims }).setProtectedHeader({
    alg: "RS256",
    typ: "JWT",
  })
    .sign(privateKey);
  await assert.rejects(verify(idLike), /typ "JWT" is not at\+jwt/);
  client.close();
});

Deno.test("RFC 9068 + DPoP: a bound token needs the DPoP scheme and a fresh proof for this request", async () => {
  await using op = await provider();
  const verify = jwtAccessTokenVerifier({ issuer: op.issuer, audience: API });
  await using rs = resource(verify);
  const dpop = await createDpop();
  const captured: Request[] = [];
  const client = await Client.discover(op.issuer, "svc", SECRET, {
    connectionBuild: (b) => {
      b.use(dpop.middleware);
      b.use(async (req, next) => {
        captured.push(req.clone());
        return await next(req);
      });
    },
  });
  const token = await client.clientCredentials.getToken({ scope: "api:read", resource: API });
  assert.equal(token.params.token_type, "DPoP");
  const claims = jose.decodeJwt(token.token) as { cnf?: { jkt?: string } };
  assert.equal(claims.cnf?.jkt, dpop.thumbprint);

  const ok = await token.get(rs.url);
  assert.equal(ok.status, 200);
  const sent = captured.at(-1)!;
  assert.match(sent.headers.get("authorization")!, /^DPoP /);

  // the same proof again: replay
  const replay = await fetch(sent.url, { headers: sent.headers });
  assert.equal(replay.status, 401);
  assert.match((await replay.json()).error_description, /replayed/);
  // the bound token as a Bearer token
  const bearer = await fetch(rs.url, { headers: { authorization: `Bearer ${token.token}` } });
  assert.equal(bearer.status, 401);
  assert.match(bearer.headers.get("www-authenticate")!, /^DPoP /);
  assert.match((await bearer.json()).error_description, /DPoP scheme/);
  // a proof for another URL
  const proof = await dpop.proof("GET", `${rs.url}/elsewhere`, token.token);
  const wrongUrl = await fetch(rs.url, {
    headers: { authorization: `DPoP ${token.token}`, dpop: proof },
  });
  assert.equal(wrongUrl.status, 401);
  assert.match((await wrongUrl.json()).error_description, /htu/);
  // a proof without ath
  const noAth = await dpop.proof("GET", rs.url);
  const unbound = await fetch(rs.url, {
    headers: { authorization: `DPoP ${token.token}`, dpop: noAth },
  });
  assert.match((await unbound.json()).error_description, /ath/);
  client.close();
});

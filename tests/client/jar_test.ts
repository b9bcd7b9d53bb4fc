/**
 * JWT-secured authorization requests (RFC 9101) against oidc-provider with
 * request objects on and signed request objects required: by value
 * (`request=`) and inside a pushed authorization request. The request
 * object's own format (header, claims) is checked as a stub would.
 */
import assert from "node:assert/strict";
import * as jose from "jose";
import { Client, generatePkce } from "../../mod.ts";
import {
  authorizationUrlWithRequestObject,
  idTokenVerifier,
  pushAuthorizationRequest,
  requestObject,
  validateAuthorizationResponse,
} from "../../oidc.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";

const REDIRECT = "http://127.0.0.1:9/callback";

async function setup() {
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true });
  const pub = { ...await jose.exportJWK(publicKey), kid: "rp-1", alg: "ES256", use: "sig" };
  const op = await startOidcProvider({
    clients: [{
      client_id: "jar-app",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code"],
      token_endpoint_auth_method: "private_key_jwt",
      token_endpoint_auth_signing_alg: "ES256",
      request_object_signing_alg: "ES256",
      require_signed_request_object: true,
      jwks: { keys: [pub] },
    }],
    configuration: {
      features: {
        devInteractions: { enabled: true },
        pushedAuthorizationRequests: { enabled: true },
        requestObjects: { enabled: true, requireSignedRequestObject: true },
      },
    },
  });
  const client = await Client.discover(op.issuer, "jar-app", "", {
    redirectUri: REDIRECT,
    authScheme: "private_key_jwt",
    clientAssertionKey: { ...await jose.exportJWK(privateKey), kid: "rp-1" } as JsonWebKey,
    clientAssertionAlg: "ES256",
    verifyToken: idTokenVerifier({ required: true }),
  });
  return { op, client, publicKey };
}

async function finish(
  op: Awaited<ReturnType<typeof setup>>["op"],
  client: Client,
  url: string,
  state: string,
  nonce: string,
  verifier: string,
) {
  const callback = await op.login(url, { redirectUri: REDIRECT });
  const { code } = await validateAuthorizationResponse(client, callback.callbackUrl, { state });
  const token = await client.authCode.getToken(code, {
    code_verifier: verifier,
    idToken: { nonce },
  });
  assert.equal(
    token.idTokenClaims?.nonce,
    nonce,
    "the nonce inside the request object reached the provider",
  );
  assert.equal(token.idTokenClaims?.sub, "alice");
}

Deno.test("JAR: the request object's header and claims (RFC 9101 §4, §10.8)", async () => {
  const { op, client, publicKey } = await setup();
  try {
    const jwt = await requestObject(client, {
      response_type: "code",
      scope: "openid",
      state: "s1",
    });
    const { payload, protectedHeader } = await jose.jwtVerify(jwt, publicKey, {
      issuer: "jar-app",
      audience: op.issuer,
      typ: "oauth-authz-req+jwt",
    });
    assert.equal(protectedHeader.alg, "ES256");
    assert.equal(protectedHeader.kid, "rp-1");
    assert.equal(payload.client_id, "jar-app");
    assert.equal(payload.scope, "openid");
    assert.equal(payload.state, "s1");
    assert.equal(typeof payload.jti, "string");
    assert.ok(payload.nbf! <= payload.iat! && payload.exp! - payload.nbf! <= 3600);
  } finally {
    await op.close();
  }
});

Deno.test("JAR by value: authorization URL with request=, login, code, ID token", async () => {
  const { op, client } = await setup();
  try {
    const pkce = await generatePkce();
    const state = crypto.randomUUID();
    const nonce = crypto.randomUUID();
    const url = await authorizationUrlWithRequestObject(client, {
      scope: "openid email",
      state,
      nonce,
      code_challenge: pkce.codeChallenge,
      code_challenge_method: "S256",
    });
    const query = new URL(url).searchParams;
    assert.deepEqual([...query.keys()].sort(), ["client_id", "request"]);
    await finish(op, client, url, state, nonce, pkce.codeVerifier);

    // the provider requires signed request objects: the same request in the clear is refused
    const plain = client.authCode.authorizeUrl({
      scope: "openid",
      state,
      code_challenge: pkce.codeChallenge,
      code_challenge_method: "S256",
    });
    await assert.rejects(
      op.login(plain, { redirectUri: REDIRECT }),
      /invalid_request|request object/,
    );
  } finally {
    client.close();
    await op.close();
  }
});

Deno.test("JAR inside PAR: the pushed request is a signed request object", async () => {
  const { op, client } = await setup();
  const pushed: string[] = [];
  const watched = new Client("jar-app", "", {
    ...client.options,
    connectionBuild: (b) =>
      void b.use(async (req, next) => {
        if (new URL(req.url).pathname === "/request") pushed.push(await req.clone().text());
        return await next(req);
      }),
  });
  try {
    const pkce = await generatePkce();
    const state = crypto.randomUUID();
    const nonce = crypto.randomUUID();
    const { url } = await pushAuthorizationRequest(watched, {
      scope: "openid",
      state,
      nonce,
      code_challenge: pkce.codeChallenge,
      code_challenge_method: "S256",
    }, { requestObject: true });
    const form = new URLSearchParams(pushed[0]);
    assert.ok(form.has("request"), "the parameters travel in a request object");
    assert.ok(!form.has("scope") && !form.has("state") && !form.has("code_challenge"));
    assert.equal(jose.decodeJwt(form.get("request")!).state, state);
    await finish(op, watched, url, state, nonce, pkce.codeVerifier);
  } finally {
    client.close();
    watched.close();
    await op.close();
  }
});

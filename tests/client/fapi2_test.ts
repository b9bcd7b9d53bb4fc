/**
 * FAPI 2.0 Security Profile, end to end against oidc-provider with its
 * FAPI 2.0 profile on (PAR required, PKCE S256, private_key_jwt or
 * tls_client_auth, DPoP- or certificate-bound tokens, `iss` in the
 * authorization response), behind a TLS front that asks for client
 * certificates: one flow per client authentication x sender constraint
 * (discovery, PAR, the authorization response with RFC 9207 `iss`, token,
 * UserInfo, refresh), then one test per rule the profile makes the client
 * keep (docs/client.md, "FAPI 2.0").
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { X509Certificate } from "node:crypto";
import * as jose from "jose";
import { AccessToken, Client, type ClientOptions, generatePkce, OAuthError } from "../../mod.ts";
import {
  createDpop,
  type Dpop,
  idTokenVerifier,
  pushAuthorizationRequest,
  userinfo,
  validateAuthorizationResponse,
} from "../../oidc.ts";
import { type FapiProvider, startFapiProvider } from "./_fapi_provider.ts";
import { json, startStub } from "./_stub.ts";

const REDIRECT = "https://rp.example.test/cb";

interface Combo {
  id: string;
  auth: "private_key_jwt" | "tls_client_auth";
  bind: "dpop" | "mtls";
}
const COMBOS: Combo[] = [
  { id: "pkjwt-dpop", auth: "private_key_jwt", bind: "dpop" },
  { id: "pkjwt-mtls", auth: "private_key_jwt", bind: "mtls" },
  { id: "mtls-dpop", auth: "tls_client_auth", bind: "dpop" },
  { id: "mtls-mtls", auth: "tls_client_auth", bind: "mtls" },
];

async function clientKey(): Promise<{ priv: jose.JWK; pub: jose.JWK }> {
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true });
  const kid = crypto.randomUUID().slice(0, 8);
  return {
    priv: { ...await jose.exportJWK(privateKey), kid, alg: "ES256" },
    pub: { ...await jose.exportJWK(publicKey), kid, alg: "ES256", use: "sig" },
  };
}

/** The registration of each combination, and its private key. */
async function registrations(): Promise<
  { clients: Record<string, unknown>[]; keys: Record<string, jose.JWK> }
> {
  const clients: Record<string, unknown>[] = [];
  const keys: Record<string, jose.JWK> = {};
  for (const c of COMBOS) {
    const meta: Record<string, unknown> = {
      client_id: c.id,
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: c.auth,
      id_token_signed_response_alg: "ES256",
    };
    if (c.auth === "private_key_jwt") {
      const k = await clientKey();
      keys[c.id] = k.priv;
      meta.jwks = { keys: [k.pub] };
      meta.token_endpoint_auth_signing_alg = "ES256";
    } else {
      meta.tls_client_auth_subject_dn = `CN=${c.id}`;
    }
    if (c.bind === "dpop") meta.dpop_bound_access_tokens = true;
    else meta.tls_client_certificate_bound_access_tokens = true;
    clients.push(meta);
  }
  return { clients, keys };
}

/** The client of one combination, as an application configures it for FAPI 2.0. */
async function fapiClient(
  op: FapiProvider,
  combo: Combo,
  key: jose.JWK | undefined,
  dpop: Dpop | undefined,
  seen?: { path: string; auth: string | null; proof: boolean; body: string }[],
): Promise<Client> {
  const options: ClientOptions = {
    profile: "fapi2",
    authScheme: combo.auth,
    redirectUri: REDIRECT,
    verifyToken: idTokenVerifier({ required: true }),
    // a certificate for tls_client_auth and for certificate-bound tokens; the CA for the server
    connectionOpts: op.tls(
      combo.auth === "tls_client_auth" || combo.bind === "mtls" ? combo.id : undefined,
    ),
    connectionBuild: (b) => {
      if (dpop) b.use(dpop.middleware);
      if (seen) {
        b.use(async (req, next) => {
          const body = req.method === "POST" ? await req.clone().text() : "";
          seen.push({
            path: new URL(req.url).pathname,
            auth: req.headers.get("authorization"),
            proof: req.headers.has("dpop"),
            body,
          });
          return await next(req);
        });
      }
    },
  };
  if (key) {
    options.clientAssertionKey = key as JsonWebKey;
    options.clientAssertionAlg = "ES256";
  }
  return await Client.discover(op.issuer, combo.id, "", options);
}

/** PAR, login and consent, the validated authorization response: the code and what to check. */
async function authorize(op: FapiProvider, client: Client) {
  const pkce = await generatePkce();
  const state = crypto.randomUUID();
  const nonce = crypto.randomUUID();
  const par = await pushAuthorizationRequest(client, {
    scope: "openid email offline_access",
    prompt: "consent",
    state,
    nonce,
    code_challenge: pkce.codeChallenge,
    code_challenge_method: "S256",
  });
  const callback = await op.login(par.url, REDIRECT);
  return { callback, state, nonce, pkce };
}

async function sha256b64url(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return Buffer.from(d).toString("base64url");
}

for (const combo of COMBOS) {
  Deno.test(`FAPI 2.0 ${combo.auth} + ${combo.bind === "dpop" ? "DPoP" : "mTLS"}-bound tokens: discovery, PAR, iss, token, UserInfo, refresh`, async () => {
    const { clients, keys } = await registrations();
    await using op = await startFapiProvider({ clients, certificates: COMBOS.map((c) => c.id) });
    const dpop = combo.bind === "dpop" ? await createDpop() : undefined;
    const seen: { path: string; auth: string | null; proof: boolean; body: string }[] = [];
    const client = await fapiClient(op, combo, keys[combo.id], dpop, seen);
    try {
      assert.equal(client.options.parUrl, `${op.issuer}/request`);

      const { callback, state, nonce, pkce } = await authorize(op, client);
      // the authorization endpoint got only client_id and request_uri (PAR)
      assert.deepEqual(
        [...new URL(callback.callbackUrl).searchParams.keys()].sort(),
        ["code", "iss", "state"],
      );
      const response = await validateAuthorizationResponse(client, callback.callbackUrl, { state });
      assert.equal(response.iss, op.issuer);

      const token = await client.authCode.getToken(response.code, {
        code_verifier: pkce.codeVerifier,
        idToken: { nonce },
      });
      assert.equal(token.idTokenClaims?.nonce, nonce);
      assert.equal(token.idTokenClaims?.iss, op.issuer);
      const stored = await op.provider.AccessToken.find(token.token);
      assert.ok(stored, "the provider knows the token");
      if (combo.bind === "dpop") {
        assert.equal(token.params.token_type, "DPoP");
        assert.equal(stored.jkt, dpop!.thumbprint, "bound to the client's DPoP key");
      } else {
        assert.equal(token.params.token_type, "Bearer");
        assert.equal(
          stored["x5t#S256"],
          await sha256b64url(new X509Certificate(op.pki.clients[combo.id].cert).raw),
          "bound to the client's certificate",
        );
      }

      const claims = await userinfo(token);
      assert.equal(claims.sub, "alice");
      assert.equal(claims.email, "alice@example.test");

      const fresh = await token.refresh();
      assert.notEqual(fresh.token, token.token);
      assert.equal((await userinfo(fresh)).sub, "alice");
      assert.equal(fresh.idTokenClaims?.sub, "alice");

      // what went over the wire
      const tokenRequests = seen.filter((s) => s.path === "/token");
      assert.ok(tokenRequests.length >= 2);
      for (const r of [...tokenRequests, ...seen.filter((s) => s.path === "/request")]) {
        const form = new URLSearchParams(r.body);
        assert.equal(r.auth, null, "no client secret in a header");
        assert.ok(!form.has("client_secret"));
        if (combo.auth === "private_key_jwt") {
          const assertion = jose.decodeJwt(form.get("client_assertion")!);
          assert.equal(assertion.aud, op.issuer, "the assertion's audience is the issuer");
        } else {
          assert.equal(form.get("client_id"), combo.id);
          assert.ok(!form.has("client_assertion"));
        }
        assert.equal(r.proof, combo.bind === "dpop");
      }
      const me = seen.filter((s) => s.path === "/me");
      assert.ok(me.length >= 2);
      for (const r of me) {
        assert.match(r.auth!, combo.bind === "dpop" ? /^DPoP / : /^Bearer /);
      }
    } finally {
      client.close();
    }
  });
}

/** One provider and a private_key_jwt + DPoP client for the rule tests. */
async function ruleSetup() {
  const { clients, keys } = await registrations();
  const op = await startFapiProvider({ clients, certificates: COMBOS.map((c) => c.id) });
  const dpop = await createDpop();
  const client = await fapiClient(op, COMBOS[0], keys[COMBOS[0].id], dpop);
  return { op, client, dpop, keys };
}

function refused(code: string, pattern: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof OAuthError, String(e));
    assert.equal(e.code, code);
    assert.match(e.description ?? "", pattern);
    return true;
  };
}

Deno.test("FAPI 2.0 rules: the authorization response (RFC 9207 iss, state, errors)", async (t) => {
  const { op, client } = await ruleSetup();
  try {
    const { callback, state } = await authorize(op, client);
    const url = new URL(callback.callbackUrl);

    await t.step("a response without iss is refused", async () => {
      const stripped = new URL(url);
      stripped.searchParams.delete("iss");
      await assert.rejects(
        validateAuthorizationResponse(client, stripped, { state }),
        refused("invalid_authorization_response", /no iss/),
      );
    });
    await t.step("a response with another state, or none expected, is refused", async () => {
      await assert.rejects(
        validateAuthorizationResponse(client, url, { state: "other" }),
        refused("invalid_authorization_response", /state/),
      );
      await assert.rejects(
        validateAuthorizationResponse(client, url),
        refused("invalid_authorization_response", /state/),
      );
    });
    await t.step(
      "an error response is the provider's error, after its iss is checked",
      async () => {
        const denied = new URL(REDIRECT);
        denied.search = new URLSearchParams({
          error: "access_denied",
          error_description: "the user said no",
          state,
          iss: op.issuer,
        }).toString();
        await assert.rejects(
          validateAuthorizationResponse(client, denied, { state }),
          refused("access_denied", /the user said no/),
        );
        denied.searchParams.set("iss", "https://attacker.example");
        await assert.rejects(
          validateAuthorizationResponse(client, denied, { state }),
          refused("invalid_authorization_response", /attacker/),
        );
      },
    );
    await t.step("the untouched response passes", async () => {
      const ok = await validateAuthorizationResponse(client, url, { state });
      assert.equal(ok.code, callback.code);
    });
  } finally {
    client.close();
    await op.close();
  }
});

Deno.test("FAPI 2.0 rules: a mix-up attack through a second provider is refused (RFC 9207)", async () => {
  // The client talks to two providers. The user starts a flow with the
  // honest one (H); the attacker's provider (A) gets the user to return a
  // response of A's to the client's callback under H's flow. The client
  // looks up the flow by its state, expects H's issuer, and refuses before
  // the code reaches any token endpoint.
  const { clients, keys } = await registrations();
  await using honest = await startFapiProvider({ clients, certificates: COMBOS.map((c) => c.id) });
  await using attacker = await startFapiProvider({ clients, pki: honest.pki });
  const dpop = await createDpop();
  const seen: { path: string; auth: string | null; proof: boolean; body: string }[] = [];
  const toHonest = await fapiClient(honest, COMBOS[0], keys[COMBOS[0].id], dpop, seen);
  const toAttacker = await fapiClient(attacker, COMBOS[0], keys[COMBOS[0].id], dpop);
  try {
    const flowAtHonest = await authorize(honest, toHonest);
    const flowAtAttacker = await authorize(attacker, toAttacker);
    // A's response, carrying the state of the flow started at H
    const injected = new URL(flowAtAttacker.callback.callbackUrl);
    injected.searchParams.set("state", flowAtHonest.state);
    const before = seen.length;
    await assert.rejects(
      validateAuthorizationResponse(toHonest, injected, { state: flowAtHonest.state }),
      refused("invalid_authorization_response", new RegExp(`is not ${honest.issuer}`)),
    );
    assert.equal(seen.length, before, "nothing was sent anywhere");
    // H's own response is accepted
    const own = await validateAuthorizationResponse(toHonest, flowAtHonest.callback.callbackUrl, {
      state: flowAtHonest.state,
    });
    assert.equal(own.iss, honest.issuer);
  } finally {
    toHonest.close();
    toAttacker.close();
  }
});

Deno.test("FAPI 2.0 rules: an ID token without the expected nonce is refused", async () => {
  const { op, client } = await ruleSetup();
  try {
    const { callback, state, pkce } = await authorize(op, client);
    const { code } = await validateAuthorizationResponse(client, callback.callbackUrl, { state });
    await assert.rejects(
      client.authCode.getToken(code, {
        code_verifier: pkce.codeVerifier,
        idToken: { nonce: "not-the-one-sent" },
      }),
      refused("invalid_id_token", /nonce/),
    );
  } finally {
    client.close();
    await op.close();
  }
});

Deno.test("FAPI 2.0 rules: requests go by PAR with PKCE S256, signed with PS256/ES256/EdDSA, tokens in the header", async () => {
  const { op, client } = await ruleSetup();
  try {
    assert.throws(
      () => client.authCode.authorizeUrl({ scope: "openid" }),
      /FAPI 2\.0 sends authorization requests only by PAR/,
    );
    await assert.rejects(
      pushAuthorizationRequest(client, {
        scope: "openid",
        code_challenge: "x",
        code_challenge_method: "plain",
      }),
      /PKCE with code_challenge_method S256/,
    );
    await assert.rejects(pushAuthorizationRequest(client, { scope: "openid" }), /PKCE/);

    const rs256 = await jose.generateKeyPair("RS256", { extractable: true });
    const rsaClient = new Client("pkjwt-dpop", "", {
      site: op.issuer,
      issuer: op.issuer,
      profile: "fapi2",
      authScheme: "private_key_jwt",
      clientAssertionKey: await jose.exportJWK(rs256.privateKey) as JsonWebKey,
      clientAssertionAlg: "RS256",
      connectionOpts: op.tls(),
    });
    await assert.rejects(
      rsaClient.clientCredentials.getToken(),
      /FAPI 2\.0 allows PS256, ES256 or EdDSA/,
    );
    rsaClient.close();

    const token = new AccessToken(client, "abc", { mode: "query" });
    assert.throws(() => token.get("/me"), /only in the Authorization header/);
  } finally {
    client.close();
    await op.close();
  }
});

Deno.test("FAPI 2.0 rules: token responses must be sender-constrained", async (t) => {
  let tokenType = "Bearer";
  await using stub = startStub(() =>
    json({ access_token: "at-1234567890", token_type: tokenType, expires_in: 60 })
  );
  const dpop = await createDpop();
  await t.step("a DPoP request answered with a Bearer token is refused (RFC 9449 §5)", async () => {
    const client = new Client("c", "secret-123456", {
      site: stub.url,
      connectionBuild: (b) => void b.use(dpop.middleware),
    });
    await assert.rejects(
      client.clientCredentials.getToken(),
      refused("invalid_token_type", /carried a DPoP proof.*"Bearer"/),
    );
    tokenType = "DPoP";
    assert.equal((await client.clientCredentials.getToken()).token, "at-1234567890");
  });
  await t.step(
    "under FAPI 2.0, a Bearer token without a client certificate is refused",
    async () => {
      tokenType = "Bearer";
      const { privateKey } = await jose.generateKeyPair("ES256", { extractable: true });
      const client = new Client("c", "", {
        site: stub.url,
        profile: "fapi2",
        authScheme: "private_key_jwt",
        clientAssertionKey: await jose.exportJWK(privateKey) as JsonWebKey,
        clientAssertionAlg: "ES256",
      });
      await assert.rejects(
        client.clientCredentials.getToken(),
        refused("invalid_token_type", /sender-constrained/),
      );
    },
  );
});

Deno.test("FAPI 2.0 rules: ID tokens signed with RS256 are refused", async () => {
  const rsa = await jose.generateKeyPair("RS256", { extractable: true });
  const jwk = { ...await jose.exportJWK(rsa.publicKey), kid: "r1", alg: "RS256" };
  let issuer = "";
  await using stub = startStub(async (req) => {
    if (req.url.pathname === "/jwks") return json({ keys: [jwk] });
    const now = Math.floor(Date.now() / 1000);
    const idToken = await new jose.SignJWT({ nonce: "n" })
      .setProtectedHeader({ alg: "RS256", kid: "r1" })
      .setIssuer(issuer).setAudience("c").setSubject("alice").setIssuedAt(now).setExpirationTime(
        now + 60,
      )
      .sign(rsa.privateKey);
    return json({ access_token: "at-1234567890", token_type: "DPoP", id_token: idToken });
  });
  issuer = stub.url;
  const dpop = await createDpop();
  const make = (profile?: "fapi2") =>
    new Client("c", "", {
      site: stub.url,
      issuer,
      jwksUri: `${stub.url}/jwks`,
      profile,
      authScheme: "tls_client_auth",
      verifyToken: idTokenVerifier({ required: true }),
      connectionBuild: (b) => void b.use(dpop.middleware),
    });
  await assert.rejects(
    make("fapi2").getToken({ grant_type: "authorization_code", code: "c" }),
    refused("invalid_id_token", /alg "RS256" is not accepted/),
  );
  const plain = await make().getToken({ grant_type: "authorization_code", code: "c" });
  assert.equal(plain.idTokenClaims?.sub, "alice", "accepted outside the profile");
});

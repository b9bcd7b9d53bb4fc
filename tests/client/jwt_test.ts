/**
 * JWT signing on WebCrypto, verified by an independent implementation (jose):
 * the assertion grant with every algorithm and key form, and the
 * private_key_jwt client assertion's claims.
 */
import assert from "node:assert/strict";
import * as jose from "jose";
import { Client, generatePkce, JWT_BEARER_GRANT, SUPPORTED_ALGORITHMS } from "../../mod.ts";
import { json, startStub } from "./_stub.ts";

type KeyCase = {
  alg: string;
  sign: CryptoKey | JsonWebKey | string | Uint8Array;
  verify: CryptoKey | Uint8Array;
};

function pem(der: ArrayBuffer, label: string): string {
  const b64 = btoa(String.fromCharCode(...new Uint8Array(der))).replace(/(.{64})/g, "$1\n");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

const pairs = new Map<string, { privateKey: unknown; publicKey: unknown }>();

async function keyFor(alg: string, form: "pem" | "jwk"): Promise<KeyCase> {
  if (alg.startsWith("HS")) {
    const secret = "hmac-shared-secret-0123456789abcdef-0123456789abcdef-0123456789ab";
    return { alg, sign: secret, verify: new TextEncoder().encode(secret) };
  }
  // one RSA pair serves every RS*/PS* case (2048-bit generation is the slow part)
  const family = alg.startsWith("RS") || alg.startsWith("PS") ? "RSA" : alg;
  const pair = pairs.get(family) ??
    await jose.generateKeyPair(family === "RSA" ? "RS256" : alg, { extractable: true });
  pairs.set(family, pair);
  const pkcs8 = await crypto.subtle.exportKey("pkcs8", pair.privateKey as CryptoKey);
  const spki = await crypto.subtle.exportKey("spki", pair.publicKey as CryptoKey);
  let sign: string | JsonWebKey = pem(pkcs8, "PRIVATE KEY");
  if (form === "jwk") {
    const jwk = await jose.exportJWK(await jose.importPKCS8(sign, alg, { extractable: true }));
    sign = jwk as JsonWebKey;
  }
  return { alg, sign, verify: await jose.importSPKI(pem(spki, "PUBLIC KEY"), alg) as CryptoKey };
}

Deno.test("assertion grant: every supported algorithm, PEM and JWK keys, verified by jose", async () => {
  await using stub = startStub(() => json({ access_token: "via-assertion", expires_in: 60 }));
  const client = new Client("id", "s", { site: stub.url, authScheme: "request_body" });
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: "svc@example.iam",
    sub: "svc@example.iam",
    aud: `${stub.url}/oauth/token`,
    exp: now + 300,
    scope: "x",
  };
  assert.deepEqual(
    [...SUPPORTED_ALGORITHMS],
    [
      "HS256",
      "HS384",
      "HS512",
      "RS256",
      "RS384",
      "RS512",
      "PS256",
      "PS384",
      "PS512",
      "ES256",
      "ES384",
      "EdDSA",
    ],
  );
  for (const alg of SUPPORTED_ALGORITHMS) {
    for (const form of alg.startsWith("HS") ? ["pem" as const] : ["pem" as const, "jwk" as const]) {
      const key = await keyFor(alg, form);
      const token = await client.assertion.getToken(claims, {
        algorithm: alg,
        key: key.sign,
        kid: "kid-1",
      });
      assert.equal(token.token, "via-assertion");
      const sent = stub.last().form;
      assert.equal(sent.get("grant_type"), JWT_BEARER_GRANT);
      const { payload, protectedHeader } = await jose.jwtVerify(
        sent.get("assertion")!,
        key.verify,
        {
          algorithms: [alg],
        },
      );
      assert.deepEqual(protectedHeader, { alg, typ: "JWT", kid: "kid-1" }, `${alg} ${form}`);
      assert.deepEqual(payload, claims, `${alg} ${form}`);
    }
  }
});

Deno.test("assertion grant: a PKCS#1 RSA PEM and a CryptoKey are accepted; bad keys are a TypeError", async () => {
  await using stub = startStub(() => json({ access_token: "ok" }));
  const client = new Client("id", "s", { site: stub.url });
  const { privateKey, publicKey } = await jose.generateKeyPair("RS256", { extractable: true });
  await client.assertion.getToken({ iss: "a", exp: 2000000000 }, {
    algorithm: "RS256",
    key: privateKey as CryptoKey,
  });
  await jose.jwtVerify(stub.last().form.get("assertion")!, publicKey);
  // PKCS#1: the RSAPrivateKey inside the PKCS#8 structure (offset found by DER parsing of the wrapper)
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", privateKey as CryptoKey));
  const octet = pkcs8.indexOf(0x04, 20);
  const lenBytes = pkcs8[octet + 1] & 0x7f;
  const pkcs1 = pkcs8.slice(octet + 2 + lenBytes);
  await client.assertion.getToken({ iss: "b", exp: 2000000000 }, {
    algorithm: "RS256",
    key: pem(pkcs1.buffer, "RSA PRIVATE KEY"),
  });
  const { payload } = await jose.jwtVerify(stub.last().form.get("assertion")!, publicKey);
  assert.equal(payload.iss, "b");
  await assert.rejects(
    client.assertion.getToken({}, {
      algorithm: "ES256",
      key: "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----",
    }),
    (e: unknown) => e instanceof TypeError && /PKCS#8/.test(e.message),
  );
  await assert.rejects(
    client.assertion.getToken({}, { algorithm: "RS256", key: "not a pem" }),
    TypeError,
  );
  await assert.rejects(
    client.assertion.getToken({ exp: "soon" }, { algorithm: "HS256", key: "k" }),
    /"claims.exp"/,
  );
  await assert.rejects(
    client.assertion.getToken({}, { algorithm: "RS256", key: new Uint8Array(4) }),
    /HS\*/,
  );
  const stranger = await jose.generateKeyPair("ES256", { extractable: true });
  await assert.rejects(
    client.assertion.getToken({}, {
      algorithm: "RS256",
      key: await crypto.subtle.exportKey("jwk", stranger.privateKey as CryptoKey),
    }),
    /cannot be used with "RS256"/,
  );
});

Deno.test("private_key_jwt: iss = sub = client id, aud = token endpoint, unique jti, short exp", async () => {
  await using stub = startStub(() => json({ access_token: "t" }));
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await crypto.subtle.exportKey("jwk", privateKey as CryptoKey)), kid: "es-1" };
  const client = new Client("my-client", "", {
    site: stub.url,
    tokenUrl: "/token",
    authScheme: "private_key_jwt",
    clientAssertionKey: jwk,
  });
  await client.clientCredentials.getToken();
  const first = stub.last().form;
  await client.clientCredentials.getToken();
  const second = stub.last().form;
  assert.equal(
    first.get("client_assertion_type"),
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
  );
  assert.equal(first.get("client_id"), "my-client");
  assert.equal(stub.last().headers.get("authorization"), null);
  const a = await jose.jwtVerify(first.get("client_assertion")!, publicKey, {
    issuer: "my-client",
    subject: "my-client",
    audience: `${stub.url}/token`,
  });
  const b = await jose.jwtVerify(second.get("client_assertion")!, publicKey);
  assert.equal(a.protectedHeader.alg, "ES256", "algorithm inferred from the EC JWK");
  assert.equal(a.protectedHeader.kid, "es-1");
  assert.notEqual(a.payload.jti, b.payload.jti);
  assert.ok(a.payload.exp! - a.payload.iat! <= 300);
  assert.ok(a.payload.exp! > Date.now() / 1000);
});

Deno.test("generatePkce: 43-character verifier, S256 challenge of it", async () => {
  const a = await generatePkce();
  const b = await generatePkce();
  assert.match(a.codeVerifier, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(a.codeVerifier, b.codeVerifier);
  assert.equal(a.codeChallengeMethod, "S256");
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(a.codeVerifier)),
  );
  assert.equal(a.codeChallenge, jose.base64url.encode(digest));
});

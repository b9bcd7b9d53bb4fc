/** Access-token signing and verification: HS256, key sets, JWKS, and the refusals. */
import assert from "node:assert/strict";
import { jose } from "../../../deps.ts";
import { readConfig } from "../../../server/config/mod.ts";
import {
  JwtService,
  VERIFIED_MAX,
  VERIFIED_MAX_CHARS,
  VERIFIED_TOKEN_MAX_CHARS,
} from "../../../server/auth/jwt.ts";
import { AuthError, statusOf } from "../../../server/api/errors.ts";
import { BASE_ENV, startTestServer, TEST_JWT_SECRET } from "../../helpers/server.ts";
import { signUpSession } from "./_helpers.ts";
import { uniqueEmail } from "../../helpers/http.ts";

async function keyPair(alg: string, kid: string, sign: boolean) {
  const { privateKey } = await jose.generateKeyPair(alg, {
    extractable: true,
    crv: alg === "EdDSA" ? "Ed25519" : undefined,
  });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, kid, alg, key_ops: sign ? ["sign", "verify"] : ["verify"] };
}

function service(env: Record<string, string>) {
  return JwtService.create(readConfig({ ...BASE_ENV, ...env }).config);
}

const now = () => Math.floor(Date.now() / 1000);

async function refused(p: Promise<unknown>, why: RegExp) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof AuthError);
    assert.equal(statusOf(e), 403);
    assert.equal(e.errorCode, "bad_jwt");
    assert.match(e.message, why);
    return true;
  });
}

Deno.test("HS256 with JWT_SECRET: signs, verifies, iss is API_EXTERNAL_URL; expired tokens are refused", async () => {
  const jwt = await service({});
  const token = await jwt.sign({ sub: "u1", iat: now(), exp: now() + 60, aud: "authenticated" });
  assert.deepEqual(jose.decodeProtectedHeader(token), { alg: "HS256", typ: "JWT" });
  const claims = await jwt.verify(token);
  assert.equal(claims.iss, "http://localhost:8081");
  assert.equal(claims.sub, "u1");
  // the same token checks out with the secret, independently of our code
  await jose.jwtVerify(token, new TextEncoder().encode(TEST_JWT_SECRET));
  const old = await jwt.sign({ sub: "u1", iat: now() - 100, exp: now() - 10 });
  await refused(jwt.verify(old), /expired/);
  const other = await (await service({ AUTHSVC_JWT_SECRET: "another-secret-another-secret-1234" }))
    .sign({ sub: "u1", exp: now() + 60 });
  await refused(jwt.verify(other), /signature/);
});

Deno.test("HS256 with JWT_SECRET: the token is the one jose signs, byte for byte", async () => {
  const jwt = await service({});
  const key = new TextEncoder().encode(TEST_JWT_SECRET);
  const claims = {
    sub: "9a1c6f8e-0000-4000-8000-000000000001",
    aud: "authenticated",
    exp: now() + 3600,
    iat: now(),
    email: "zoë+ü@example.com",
    phone: "",
    app_metadata: { provider: "email", providers: ["email"] },
    user_metadata: { name: 'Zoë \u2028 "quoted" \ud83d\ude00', nested: { n: 1.5, none: null } },
    role: "authenticated",
    aal: "aal1",
    amr: [{ method: "password", timestamp: now() }],
    session_id: "9a1c6f8e-0000-4000-8000-000000000002",
    is_anonymous: false,
    dropped: undefined,
  };
  for (const c of [claims, { ...claims, iss: "https://elsewhere.example" }, {}]) {
    const expected = await new jose.SignJWT({ iss: "http://localhost:8081", ...c })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .sign(key);
    assert.equal(await jwt.sign(c), expected);
  }
  for (const k of ["iat", "nbf", "exp"]) {
    await assert.rejects(jwt.sign({ [k]: Infinity }), TypeError);
    await assert.rejects(
      new jose.SignJWT({ [k]: Infinity }).setProtectedHeader({ alg: "HS256" }).sign(key),
      TypeError,
    );
  }
});

Deno.test("HS256 tokens: refused as jose refuses them, with its reasons", async () => {
  const jwt = await service({});
  const secret = new TextEncoder().encode(TEST_JWT_SECRET);
  const b64 = (s: string) => btoa(s).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");
  const signRaw = async (header: object, payload: string) => {
    const h = b64(JSON.stringify(header));
    const p = b64(payload);
    const key = await crypto.subtle.importKey(
      "raw",
      secret,
      { name: "HMAC", hash: "SHA-256" },
      false,
      [
        "sign",
      ],
    );
    const mac = new Uint8Array(
      await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${h}.${p}`)),
    );
    return `${h}.${p}.${b64(String.fromCharCode(...mac))}`;
  };
  const good = await jwt.sign({ sub: "u1", exp: now() + 60, aud: "authenticated" });
  const [h, p, sig] = good.split(".");
  const flip = (s: string, i: number) =>
    s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
  const cases: [string, string, RegExp | null][] = [
    ["valid", good, null],
    ["signature changed", `${h}.${p}.${flip(sig, 5)}`, /signature/],
    [
      "signature's last character changed (same bytes would decode for a non-canonical one)",
      `${h}.${p}.${sig.slice(0, -1)}${sig.endsWith("A") ? "E" : "A"}`,
      /signature/,
    ],
    ["signature cut short", `${h}.${p}.${sig.slice(0, 20)}`, /signature/],
    ["signature missing", `${h}.${p}.`, /signature/],
    ["payload changed", `${h}.${flip(p, 3)}.${sig}`, /signature|JSON|object/],
    ["a fourth part", `${good}.x`, /./],
    [
      "expired",
      await signRaw({ alg: "HS256", typ: "JWT" }, JSON.stringify({ sub: "u", exp: now() - 1 })),
      /expired/,
    ],
    [
      "not yet valid",
      await signRaw({ alg: "HS256" }, JSON.stringify({ sub: "u", nbf: now() + 600 })),
      /nbf/,
    ],
    [
      "exp not a number",
      await signRaw({ alg: "HS256" }, JSON.stringify({ sub: "u", exp: "tomorrow" })),
      /exp/,
    ],
    ["payload an array", await signRaw({ alg: "HS256" }, "[1,2]"), /object/],
    ["payload not JSON", await signRaw({ alg: "HS256" }, "{not json"), /object|JSON/],
    [
      "sub not a string",
      await signRaw({ alg: "HS256" }, JSON.stringify({ sub: 42, exp: now() + 60 })),
      /sub/,
    ],
    [
      "crit header (left to jose)",
      await signRaw({ alg: "HS256", crit: ["exp"] }, JSON.stringify({ sub: "u" })),
      /crit|Extension|unrecognized/i,
    ],
  ];
  for (const [name, token, why] of cases) {
    if (why === null) {
      assert.equal((await jwt.verify(token)).sub, "u1", name);
      continue;
    }
    await refused(jwt.verify(token), why).catch((e) => {
      throw new Error(`${name}: ${e.message}`);
    });
    // jose (the reference) refuses it too
    await assert.rejects(
      jose.jwtVerify(token, secret, { algorithms: ["HS256"] }).then((r) => {
        if (typeof r.payload.sub !== "string") throw new Error("sub");
      }),
      name,
    );
  }
  // audience: checked when asked for
  assert.equal((await jwt.verify(good, { audience: "authenticated" })).sub, "u1");
  await refused(jwt.verify(good, { audience: "someone-else" }), /aud/);
});

Deno.test("a token verified once is remembered only until it expires, and never for another token", async () => {
  const jwt = await service({});
  const token = await jwt.sign({ sub: "u1", exp: now() + 2, aud: "authenticated" });
  const first = await jwt.verify(token);
  first.sub = "changed by a caller";
  assert.equal((await jwt.verify(token)).sub, "u1", "callers get their own copy");
  const [h, p, sig] = token.split(".");
  const forged = `${h}.${p}.${sig.slice(0, 10)}${sig[10] === "A" ? "B" : "A"}${sig.slice(11)}`;
  await refused(jwt.verify(forged), /signature/);
  // past exp the remembered answer is dropped: the token is refused as expired
  await new Promise((r) => setTimeout(r, (now() + 3 - Date.now() / 1000) * 1000));
  await refused(jwt.verify(token), /expired/);
});

Deno.test("remembered tokens stay within their count and characters, large metadata or not", async () => {
  const jwt = await service({});
  // Tokens just under the length that is remembered at all, as users with large metadata get.
  const pad = "x".repeat(Math.floor((VERIFIED_TOKEN_MAX_CHARS - 300) * 3 / 4)); // base64: 4/3
  const n = Math.ceil(VERIFIED_MAX_CHARS / (VERIFIED_TOKEN_MAX_CHARS - 500)) + 200;
  let first = "";
  for (let i = 0; i < n; i++) {
    const token = await jwt.sign({ sub: `u${i}`, exp: now() + 600, user_metadata: { pad } });
    assert.ok(
      token.length <= VERIFIED_TOKEN_MAX_CHARS && token.length > VERIFIED_TOKEN_MAX_CHARS - 500,
    );
    first ||= token;
    assert.equal((await jwt.verify(token)).sub, `u${i}`);
    const kept = jwt.rememberedTokens;
    assert.ok(kept.chars <= VERIFIED_MAX_CHARS && kept.count <= VERIFIED_MAX, JSON.stringify(kept));
  }
  assert.ok(jwt.rememberedTokens.count < n, "the oldest went");
  // the earliest token was forgotten, and still verifies (fully, again)
  assert.equal((await jwt.verify(first)).sub, "u0");
  // many small tokens: the count bounds them
  for (let i = 0; i < VERIFIED_MAX + 50; i++) {
    await jwt.verify(await jwt.sign({ sub: `s${i}`, exp: now() + 600 }));
  }
  assert.equal(jwt.rememberedTokens.count, VERIFIED_MAX);
});

for (const alg of ["RS256", "ES256", "EdDSA"]) {
  Deno.test(`${alg} from AUTHSVC_JWT_KEYS: kid in the header, public key in the JWKS`, async () => {
    const signing = await keyPair(alg, `k-${alg}`, true);
    const jwt = await service({ AUTHSVC_JWT_KEYS: JSON.stringify([signing]) });
    const token = await jwt.sign({ sub: "u2", exp: now() + 60 });
    const header = jose.decodeProtectedHeader(token);
    assert.equal(header.alg, alg);
    assert.equal(header.kid, `k-${alg}`);
    assert.equal((await jwt.verify(token)).sub, "u2");
    const { keys } = jwt.jwks();
    assert.equal(keys.length, 1);
    assert.equal(keys[0].kid, `k-${alg}`);
    assert.equal(keys[0].d, undefined, "no private part is published");
    // a relying party verifies with the published key set alone
    const { payload } = await jose.jwtVerify(
      token,
      jose.createLocalJWKSet({ keys: keys as jose.JWK[] }),
    );
    assert.equal(payload.sub, "u2");
  });
}

Deno.test("refused: alg none, unknown kid, HS256 signed with a public key as the secret", async () => {
  const rsa = await keyPair("RS256", "rsa-1", true);
  const jwt = await service({ AUTHSVC_JWT_KEYS: JSON.stringify([rsa]) });
  const payload = { sub: "attacker", role: "service_role", exp: now() + 600 };
  const b64 = (o: unknown) =>
    btoa(JSON.stringify(o)).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");

  await refused(jwt.verify(`${b64({ alg: "none", typ: "JWT" })}.${b64(payload)}.`), /not allowed/);
  await refused(
    jwt.verify(`${b64({ alg: "none", kid: "rsa-1" })}.${b64(payload)}.`),
    /not allowed/,
  );

  const stranger = await keyPair("RS256", "who", true);
  const foreign = await new jose.SignJWT(payload).setProtectedHeader({ alg: "RS256", kid: "who" })
    .sign(await jose.importJWK({ ...stranger, key_ops: undefined }, "RS256"));
  await refused(jwt.verify(foreign), /unknown key id/);

  // the classic confusion: HS256 keyed with the public key the server publishes
  const pub = JSON.stringify(jwt.jwks().keys[0]);
  for (const header of [{ alg: "HS256", kid: "rsa-1" }, { alg: "HS256" }]) {
    const forged = await new jose.SignJWT(payload).setProtectedHeader(header)
      .sign(new TextEncoder().encode(pub));
    await refused(jwt.verify(forged), /not allowed|signature/);
  }
  await refused(jwt.verify("not.a.jwt"), /malformed|parse/);
});

Deno.test("after a key rotation, tokens of the old key still verify and both keys are published", async () => {
  const oldKey = await keyPair("ES256", "old", true);
  const before = await service({ AUTHSVC_JWT_KEYS: JSON.stringify([oldKey]) });
  const token = await before.sign({ sub: "u3", exp: now() + 60 });
  const newKey = await keyPair("ES256", "new", true);
  const after = await service({
    AUTHSVC_JWT_KEYS: JSON.stringify([{ ...oldKey, key_ops: ["verify"] }, newKey]),
  });
  assert.equal((await after.verify(token)).sub, "u3");
  assert.equal(jose.decodeProtectedHeader(await after.sign({ sub: "x" })).kid, "new");
  assert.deepEqual(after.jwks().keys.map((k) => k.kid).sort(), ["new", "old"]);
});

Deno.test("a server with a key set: /.well-known/jwks.json verifies the tokens it issues", async () => {
  const signing = await keyPair("RS256", "srv-1", true);
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_JWT_KEYS: JSON.stringify([signing]),
  });
  try {
    const s = await signUpSession(srv, uniqueEmail("jwks"));
    const jwks = await (await srv.fetch("/.well-known/jwks.json")).json();
    const { payload, protectedHeader } = await jose.jwtVerify(
      s.access_token,
      jose.createLocalJWKSet(jwks),
      { issuer: "http://localhost:8081", audience: "authenticated" },
    );
    assert.equal(protectedHeader.kid, "srv-1");
    assert.equal(payload.sub, (s.user as { id: string }).id);
    for (
      const c of [
        "email",
        "phone",
        "role",
        "app_metadata",
        "user_metadata",
        "aal",
        "amr",
        "session_id",
        "is_anonymous",
        "iat",
        "exp",
      ]
    ) {
      assert.ok(c in payload, `claim ${c}`);
    }
    const me = await srv.fetch("/user", { headers: { authorization: `Bearer ${s.access_token}` } });
    assert.equal(me.status, 200);
    await me.body?.cancel();
  } finally {
    await srv.close();
  }
});

Deno.test("a key without kid gets its thumbprint as kid, so its tokens verify", async () => {
  const { kid: _kid, ...noKid } = await keyPair("ES256", "x", true);
  const jwt = await service({ AUTHSVC_JWT_KEYS: JSON.stringify([noKid]) });
  const token = await jwt.sign({ sub: "u4", exp: now() + 60 });
  const kid = jose.decodeProtectedHeader(token).kid;
  assert.ok(kid);
  assert.equal(jwt.jwks().keys[0].kid, kid);
  assert.equal((await jwt.verify(token)).sub, "u4");
});

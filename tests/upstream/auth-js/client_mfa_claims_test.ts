/**
 * Ported from auth-js test/GoTrueClient.test.ts: multi-factor authentication (TOTP; the WebAuthn
 * cases that end before any WebAuthn support is needed), getClaims with the CLI instance's RS256
 * keys, the warnings of a client whose storage is a server's, and the JWKS cache, against the
 * CLI instance. The WebAuthn enrolment cases are out of scope (cases.ts).
 */
import { memoryLocalStorageAdapter } from "@supabase/auth-js/dist/main/lib/local-storage.js";
import { STORAGE_KEY } from "@supabase/auth-js/dist/main/lib/constants.js";
import { GoTrueClient } from "@supabase/auth-js";
import {
  assert,
  client,
  expiredJwt,
  hs256Jwt,
  internals,
  logged,
  ported,
  signedUp,
  spy,
  storageOf,
  upstream,
} from "./_helpers.ts";

/** A signed-up, signed-in client of the CLI instance (upstream's setupUserWithMFA). */
async function mfaUser() {
  const { c, email, password } = await signedUp();
  await c.initialize();
  assert.equal((await c.signInWithPassword({ email, password })).error, null);
  return c;
}

/** The same with a TOTP factor enrolled (upstream's setupUserWithMFAAndTOTP). */
async function totpUser() {
  const c = await mfaUser();
  const { data, error } = await c.mfa.enroll({ factorType: "totp" });
  assert.equal(error, null);
  assert.ok(data?.totp);
  return { c, factorId: data.id };
}

/** An aal1 access token of the CLI's HS256 secret for `sub`. */
function aal1Jwt(sub: string) {
  const now = Math.floor(Date.now() / 1000);
  return hs256Jwt({
    sub,
    aud: "authenticated",
    aal: "aal1",
    amr: [{ method: "password", timestamp: now }],
    exp: now + 3600,
    iat: now,
  });
}

/** A PKCE client whose getUser answers `answer` (upstream mocks it the same way). */
function withUser(answer: unknown) {
  const c = client({ flowType: "pkce" });
  internals(c).getUser = () => Promise.resolve(answer);
  return c;
}

/** A client on server-side storage already holding a session for `user` (no server involved). */
async function serverStorageSession(user: Record<string, unknown>) {
  const storage = memoryLocalStorageAdapter({
    [STORAGE_KEY]: JSON.stringify({
      access_token: "jwt.accesstoken.signature",
      refresh_token: "refresh-token",
      token_type: "bearer",
      expires_in: 1000,
      expires_at: Date.now() / 1000 + 1000,
      user,
    }),
  });
  storage.isServer = true;
  const { data } = await new GoTrueClient({ storage }).getSession();
  return { storage, session: data.session };
}

/** A registration credential of made-up bytes, for a request the server refuses before reading it. */
function madeUpCredential() {
  const bytes = (n: number) => crypto.getRandomValues(new Uint8Array(n));
  const b64u = (b: Uint8Array) =>
    btoa(String.fromCharCode(...b)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  const id = b64u(bytes(16));
  const json = {
    id,
    rawId: id,
    type: "public-key",
    response: { attestationObject: b64u(bytes(32)), clientDataJSON: b64u(bytes(32)) },
    clientExtensionResults: {},
  };
  return {
    id,
    rawId: bytes(16).buffer,
    type: "public-key",
    authenticatorAttachment: null,
    response: {},
    getClientExtensionResults: () => ({}),
    toJSON: () => json,
  };
}

/** The assurance levels of an aal1 token of a user whose getUser answers `factors`. */
async function aalOf(factors: unknown[]) {
  const c = withUser({ data: { user: { id: "test-user-id", factors } }, error: null });
  return await c.mfa.getAuthenticatorAssuranceLevel(await aal1Jwt("test-user-id"));
}

const M = "MFA > ";
const W = "WebAuthn MFA > ";
const C = "getClaims > ";
const SV = "GoTrueClient with storageisServer = true > ";
const JW = "fetchJwk > ";

/** fetchJwk: what is cached, how old the cache is, and how many fetches asking for kid 123 makes. */
const JWK_CASES = [
  {
    desc: "jwk exists but cache is stale",
    kid: "123",
    cachedAt: Number.MIN_SAFE_INTEGER,
    fetches: 1,
  },
  {
    desc: "jwk does not exist and cache is stale",
    kid: "234",
    cachedAt: Number.MIN_SAFE_INTEGER,
    fetches: 1,
  },
  { desc: "jwk exists in cache", kid: "123", cachedAt: Number.MAX_SAFE_INTEGER, fetches: 0 },
  {
    desc: "jwk does not exist in cache",
    kid: "234",
    cachedAt: Number.MAX_SAFE_INTEGER,
    fetches: 1,
  },
];

upstream("GoTrueClient.test.ts", import.meta.url, [
  ported(`${M}enroll({factorType: "totp"}) returns totp`, async () => {
    const c = await mfaUser();
    const { data, error } = await c.mfa.enroll({ factorType: "totp" });
    assert.equal(error, null);
    assert.ok(data?.totp.qr_code);
  }),
  ported(`${M}enroll({factorType: "totp"}) should fail without session`, async () => {
    const c = await mfaUser();
    await c.signOut();
    const { data, error } = await c.mfa.enroll({ factorType: "totp" });
    assert.match(String(error?.message), /Bearer token/);
    assert.equal(data, null);
  }),
  ported(`${M}challenge should create MFA challenge`, async () => {
    const { c, factorId } = await totpUser();
    const { data, error } = await c.mfa.challenge({ factorId });
    assert.equal(error, null);
    assert.ok(data?.id);
    assert.ok(data.expires_at);
  }),
  ported(`${M}verify should verify MFA challenge`, async () => {
    const { c, factorId } = await totpUser();
    const challenge = await c.mfa.challenge({ factorId });
    assert.equal(challenge.error, null);
    const { data, error } = await c.mfa.verify({
      factorId,
      challengeId: challenge.data!.id,
      code: "123456",
    });
    assert.match(String(error?.message), /Invalid TOTP code/);
    assert.equal(data, null);
  }),
  ported(
    `${M}challengeAndVerify should handle MFA challenge and verification in one call`,
    async () => {
      const { c, factorId } = await totpUser();
      const { data, error } = await c.mfa.challengeAndVerify({ factorId, code: "123456" });
      assert.match(String(error?.message), /Invalid TOTP code/);
      assert.equal(data, null);
    },
  ),
  ported(`${M}unenroll should remove MFA factor`, async () => {
    const { c, factorId } = await totpUser();
    assert.equal((await c.mfa.unenroll({ factorId })).error, null);
    const { data } = await c.mfa.listFactors();
    assert.deepEqual(data?.all, []);
    assert.deepEqual(data?.totp, []);
  }),
  ported(`${M}getAuthenticatorAssuranceLevel should return current AAL`, async () => {
    const { c } = await totpUser();
    const { data, error } = await c.mfa.getAuthenticatorAssuranceLevel();
    assert.equal(error, null);
    assert.ok(data?.currentLevel !== undefined);
    assert.ok(data.nextLevel !== undefined);
    assert.ok(data.currentAuthenticationMethods !== undefined);
  }),
  ported(
    `${M}getAuthenticatorAssuranceLevel with JWT parameter > JWT with aal1 and no verified factors returns aal1/aal1`,
    async () => {
      const { data, error } = await aalOf([]);
      assert.equal(error, null);
      assert.equal(data?.currentLevel, "aal1");
      assert.equal(data?.nextLevel, "aal1");
      assert.equal(data?.currentAuthenticationMethods.length, 1);
    },
  ),
  ported(
    `${M}getAuthenticatorAssuranceLevel with JWT parameter > JWT with aal1 and verified factors returns aal1/aal2`,
    async () => {
      const { data, error } = await aalOf([{ factor_type: "totp", status: "verified" }]);
      assert.equal(error, null);
      assert.equal(data?.currentLevel, "aal1");
      assert.equal(data?.nextLevel, "aal2");
      assert.equal(data?.currentAuthenticationMethods.length, 1);
    },
  ),
  ported(
    `${M}getAuthenticatorAssuranceLevel with JWT parameter > invalid JWT returns error`,
    async () => {
      const { data, error } = await client({ flowType: "pkce" }).mfa
        .getAuthenticatorAssuranceLevel("invalid-jwt-token");
      assert.match(String(error?.message), /Invalid JWT/);
      assert.equal(data, null);
    },
  ),
  ported(
    `${M}getAuthenticatorAssuranceLevel with JWT parameter > JWT where getUser fails returns error`,
    async () => {
      const c = withUser({
        data: { user: null },
        error: { message: "User not found", status: 404 },
      });
      const { data, error } = await c.mfa.getAuthenticatorAssuranceLevel(
        await aal1Jwt("nonexistent-user-id"),
      );
      assert.ok(error);
      assert.equal(data, null);
    },
  ),
  ported(`${M}_listFactors returns correct factor lists`, async () => {
    const c = withUser({
      data: {
        user: {
          id: "test-user",
          factors: [
            { factor_type: "totp", status: "verified" },
            { factor_type: "totp", status: "unverified" },
            { factor_type: "phone", status: "verified" },
            { factor_type: "phone", status: "unverified" },
          ],
        },
      },
      error: null,
    });
    const { data, error } = await internals(c)._listFactors();
    assert.equal(error, null);
    assert.equal(data.all.length, 4);
    assert.equal(data.totp.length, 1);
    assert.equal(data.phone.length, 1);
  }),
  ported(`${M}should handle MFA enroll without session`, async () => {
    const { data, error } = await client().mfa.enroll({ factorType: "totp" });
    assert.equal(data?.id, undefined);
    assert.ok(error);
  }),
  ported(`${M}should handle MFA challenge without session`, async () => {
    const { data, error } = await client().mfa.challenge({ factorId: "test-factor-id" });
    assert.equal(data?.id, undefined);
    assert.ok(error);
  }),
  ported(`${M}should handle MFA verify without session`, async () => {
    const { data, error } = await client().mfa.verify({
      factorId: "test-factor-id",
      challengeId: "f7850041-ba10-4eb3-851c-8ceb7ff8463d",
      code: "123456",
    });
    assert.equal(data?.access_token, undefined);
    assert.ok(error);
  }),
  ported(`${M}should handle MFA unenroll without session`, async () => {
    const { data, error } = await client().mfa.unenroll({ factorId: "test-factor-id" });
    assert.equal(data?.id, undefined);
    assert.ok(error);
  }),

  ported(`${W}enroll WebAuthn should fail without session`, async () => {
    const c = await mfaUser();
    await c.signOut();
    const { data, error } = await c.mfa.webauthn.enroll({ friendlyName: "Test Device" });
    assert.match(String(error?.message), /Bearer token/);
    assert.equal(data, null);
  }),
  ported(`${W}challenge WebAuthn should fail without session`, async () => {
    const c = await mfaUser();
    await c.signOut();
    const { data, error } = await c.mfa.webauthn.challenge({
      factorId: "test-factor-id",
      webauthn: { rpId: "localhost", rpOrigins: ["http://localhost:9999"] },
    });
    assert.match(String(error?.message), /Bearer token/);
    assert.equal(data, null);
  }),
  ported(`${W}challenge WebAuthn should fail with invalid factorId`, async () => {
    const c = await mfaUser();
    const { data, error } = await c.mfa.webauthn.challenge({
      factorId: "invalid-factor-id",
      webauthn: { rpId: "localhost", rpOrigins: ["http://localhost:9999"] },
    });
    assert.ok(error);
    assert.equal(data, null);
  }),
  ported(`${W}verify WebAuthn should fail without session`, async () => {
    const c = await mfaUser();
    await c.signOut();
    const { data, error } = await c.mfa.webauthn.verify({
      factorId: crypto.randomUUID(),
      challengeId: crypto.randomUUID(),
      webauthn: {
        type: "create",
        rpId: "localhost",
        rpOrigins: ["http://localhost:5173"],
        // deno-lint-ignore no-explicit-any
        credential_response: madeUpCredential() as any,
      },
    });
    assert.match(String(error?.message), /Bearer token/);
    assert.equal(data, null);
  }),

  ported(`${C}getClaims returns nothing if there is no session present`, async () => {
    const { data, error } = await client().getClaims();
    assert.equal(data, null);
    assert.equal(error, null);
  }),
  ported(`${C}getClaims verifies RS256 jwt without calling getUser`, async () => {
    const c = client();
    const getUser = spy(internals(c), "getUser");
    const { email, password } = {
      email: `c${crypto.randomUUID()}@example.com`,
      password: "pw-123456",
    };
    const up = await c.signUp({ email, password });
    assert.equal(up.error, null);
    const { data, error } = await c.getClaims();
    assert.equal(error, null);
    assert.equal(data?.claims.email, up.data.user?.email);
    // an RS256 token is checked against the JWKS, not by asking the server for the user
    assert.equal(getUser.calls.length, 0);
  }),
  ported(`${C}getClaims returns properly typed JwtPayload with documented fields`, async () => {
    const { c } = await signedUp();
    const { data, error } = await c.getClaims();
    assert.equal(error, null);
    const claims = data!.claims as Record<string, unknown>;
    assert.equal(typeof claims.sub, "string");
    assert.equal(typeof claims.role, "string");
    const optional: Record<string, string[]> = {
      email: ["string"],
      phone: ["string"],
      user_metadata: ["object"],
      app_metadata: ["object"],
      is_anonymous: ["boolean"],
      iss: ["string"],
      aud: ["string", "object"],
      exp: ["number"],
      iat: ["number"],
      aal: ["string"],
      session_id: ["string"],
      jti: ["string"],
      nbf: ["number"],
      ref: ["string"],
    };
    for (const [k, types] of Object.entries(optional)) {
      if (claims[k] !== undefined) assert.ok(types.includes(typeof claims[k]), `${k}`);
    }
    if (claims.amr) {
      assert.ok(Array.isArray(claims.amr));
      const first = (claims.amr as unknown[])[0];
      if (first !== undefined && typeof first !== "string") {
        const entry = first as { method: unknown; timestamp: unknown };
        assert.equal(typeof entry.method, "string");
        assert.equal(typeof entry.timestamp, "number");
      }
    }
  }),
  ported(`${C}getClaims should return error for expired JWT format`, async () => {
    const { c, session } = await signedUp();
    const { storage, key } = storageOf(c);
    await storage.setItem(
      key,
      JSON.stringify({
        ...session,
        access_token: await expiredJwt(),
        refresh_token: "invalid-refresh-token",
      }),
    );
    const { data, error } = await c.getClaims();
    assert.equal(data, null);
    assert.equal(error?.name, "AuthInvalidJwtError");
    assert.equal(error?.message, "JWT has expired");
  }),
  ported(
    `${C}getClaims should return error for invalid base64url encoded access_token`,
    async () => {
      const { c } = await signedUp();
      const { storage, key } = storageOf(c);
      const b64u = (o: unknown) =>
        btoa(JSON.stringify(o)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
      // a well-formed header and payload; the signature segment does not decode (17 characters)
      const header = b64u({ alg: "HS256", typ: "JWT" });
      const payload = b64u({
        aud: "authenticated",
        exp: Math.floor(Date.now() / 1000) + 3600,
        sub: "1234567890",
        role: "authenticated",
      });
      await storage.setItem(
        key,
        JSON.stringify({
          access_token: `${header}.${payload}.invalid_signature`,
          refresh_token: "invalid-refresh-token",
          expires_in: 3600,
          expires_at: Math.floor(Date.now() / 1000) + 3600,
          token_type: "bearer",
          user: null,
        }),
      );
      const { data, error } = await c.getClaims();
      assert.match(String(error?.message), /JWT not in base64url format/);
      assert.equal(data, null);
    },
  ),
  ported(`${C}getClaims should refresh expired JWT token`, async () => {
    const { c, session } = await signedUp();
    const { storage, key } = storageOf(c);
    await storage.setItem(
      key,
      JSON.stringify({ ...session, expires_at: Math.floor(Date.now() / 1000) - 3600 }),
    );
    const { data, error } = await c.getClaims();
    assert.equal(error, null);
    assert.equal(
      data?.claims.email,
      (session as { user: { email: string } }).user.email,
    );
  }),

  ported(`${SV}getSession() emits no warnings`, async () => {
    const seen = await logged("warn", async () => {
      const { session } = await serverStorageSession({ id: "random-user-id" });
      assert.ok(session?.user, "reading the user itself");
    });
    assert.equal(seen.length, 0);
  }),
  ported(
    `${SV}getSession() emits insecure warning, once per server client, when user properties are accessed`,
    async () => {
      const seen: unknown[][] = [];
      const original = console.warn;
      console.warn = (...args: unknown[]) => void seen.push(args);
      try {
        const storage = memoryLocalStorageAdapter({
          [STORAGE_KEY]: JSON.stringify({
            access_token: "jwt.accesstoken.signature",
            refresh_token: "refresh-token",
            token_type: "bearer",
            expires_in: 1000,
            expires_at: Date.now() / 1000 + 1000,
            user: { id: "random-user-id", email: "test@example.com" },
          }),
        });
        storage.isServer = true;
        const c = new GoTrueClient({ storage });
        const user = (await c.getSession()).data.session?.user;
        assert.ok(user);
        assert.equal(seen.length, 0, "reading the user object itself warns not");
        assert.equal(user.id, "random-user-id");
        assert.equal(seen.length, 1, "its first property warns");
        assert.ok(
          String(seen[0][0]).startsWith(
            "Using the user object as returned from supabase.auth.getSession() ",
          ),
        );
        assert.equal(user.email, "test@example.com");
        assert.equal(seen.length, 1, "the next one warns not");
        const again = (await c.getSession()).data.session;
        assert.equal(again?.user?.id, "random-user-id");
        // upstream's count after a second getSession(): the new proxy warns once more
        assert.equal(seen.length, 2);
      } finally {
        console.warn = original;
      }
    },
  ),
  ported(`${SV}getSession emits no warnings if getUser is called prior`, async () => {
    const seen = await logged("warn", async () => {
      const storage = { ...memoryLocalStorageAdapter(), isServer: true };
      const c = client({ storage });
      await c.signUp({
        email: `s${crypto.randomUUID()}@example.com`,
        password: "pw-123456",
      });
      const got = await c.getUser();
      assert.equal(got.error, null);
      assert.ok(got.data.user);
      const { data } = await c.getSession();
      assert.ok(data.session?.user?.id);
    });
    assert.equal(seen.length, 0);
  }),
  ported(`${SV}getSession() with destructuring emits warning`, async () => {
    const seen = await logged("warn", async () => {
      const { session } = await serverStorageSession({
        id: "random-user-id",
        email: "test@example.com",
        role: "user",
      });
      const { id, email } = session?.user ?? {};
      assert.equal(id, "random-user-id");
      assert.equal(email, "test@example.com");
    });
    assert.equal(seen.length, 1);
  }),
  ported(`${SV}getSession() with spread operator emits warning`, async () => {
    const seen = await logged("warn", async () => {
      const { session } = await serverStorageSession({
        id: "random-user-id",
        email: "test@example.com",
      });
      const copy = { ...session?.user };
      assert.equal(copy.id, "random-user-id");
    });
    assert.equal(seen.length, 1);
  }),
  ported(`${SV}getSession() with Object.keys() does not emit warning`, async () => {
    const seen = await logged("warn", async () => {
      const { session } = await serverStorageSession({
        id: "random-user-id",
        email: "test@example.com",
      });
      assert.ok(Object.keys(session?.user ?? {}).length > 0);
    });
    assert.equal(seen.length, 0);
  }),
  ported(`${SV}getSession() with JSON.stringify() emits warning`, async () => {
    const seen = await logged("warn", async () => {
      const { session } = await serverStorageSession({
        id: "random-user-id",
        email: "test@example.com",
      });
      assert.match(JSON.stringify(session?.user), /random-user-id/);
    });
    assert.equal(seen.length, 1);
  }),
  ported(`${SV}saveSession should overwrite the existing session`, async () => {
    const store = memoryLocalStorageAdapter();
    const c = client({ storageKey: "test-storage-key", storage: { ...store } });
    // One instant for every session built here, so two builds of the same session are equal.
    const createdAt = new Date().toISOString();
    const session = (n: string) => ({
      access_token: `test-${n}access-token`,
      refresh_token: `test-${n}refresh-token`,
      expires_in: 3600,
      token_type: "bearer",
      user: {
        id: "test-user-id",
        aud: "test-audience",
        user_metadata: {},
        app_metadata: {},
        created_at: createdAt,
      },
    });
    await internals(c)._saveSession(session(""));
    assert.equal(store.getItem("test-storage-key"), JSON.stringify(session("")));
    await internals(c)._saveSession(session("new-"));
    assert.equal(store.getItem("test-storage-key"), JSON.stringify(session("new-")));
  }),

  ...JWK_CASES.map((k) =>
    ported(`${JW}${k.desc}`, async () => {
      const c = client();
      const fetched: string[] = [];
      internals(c).fetch = (url: RequestInfo | URL) => {
        fetched.push(String(url));
        return Promise.resolve(
          new Response(JSON.stringify({ keys: [{ kid: "123", kty: "RSA", key_ops: ["verify"] }] })),
        );
      };
      internals(c).jwks = { keys: [{ kid: k.kid, kty: "RSA", key_ops: ["verify"] }] };
      internals(c).jwks_cached_at = k.cachedAt;
      await internals(c).fetchJwk("123");
      assert.equal(fetched.length, k.fetches);
    })
  ),
]);

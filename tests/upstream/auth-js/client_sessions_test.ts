/**
 * Ported from auth-js test/GoTrueClient.test.ts, the `GoTrueClient` block: client options,
 * sessions (refresh, setSession, getSession, the refresh deduplication), e-mail sign-up and
 * resend, one-time codes, password sign-in, against the CLI instance. Cases that upstream runs
 * with a stubbed `fetch` (what the client sends, how it reads an answer) keep their stub here.
 */
import { AuthError, AuthPKCECodeVerifierMissingError, GoTrueClient } from "@supabase/auth-js";
import {
  assert,
  assertTypes,
  client,
  creds,
  expiredJwt,
  internals,
  json,
  MemoryStorage,
  ported,
  recordingFetch,
  signedUp,
  spy,
  storageOf,
  upstream,
  USER_SHAPE,
} from "./_helpers.ts";

const TEST_USER_DATA = { info: "some info" };

type Session = {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  expires_at?: number;
  token_type: string;
  user: Record<string, unknown>;
};

/** A client whose `fetch` answers every request with `answer` and records what was sent. */
function stubbed(answer: () => Response, opts: { flowType?: "pkce" | "implicit" } = {}) {
  const rec = recordingFetch(answer);
  const storage = new MemoryStorage();
  const c = client({ fetch: rec.fetch, storage, ...opts });
  return { c, storage, key: storageOf(c).key, calls: rec.calls };
}

/** The session fields of a password sign-in, with the user fields it carries. */
function assertSession(session: unknown, email: string): void {
  assertTypes(session, {
    access_token: "string",
    refresh_token: "string",
    expires_in: "number",
    expires_at: "number",
  });
  const user = (session as Session).user;
  assertTypes(user, USER_SHAPE);
  assert.equal((user.app_metadata as { provider: string }).provider, "email");
  assert.equal(user.email, email);
}

/** Both concurrent refreshes of one token, through the client's private entry point. */
function twoRefreshes(c: GoTrueClient, token: string) {
  const call = () => internals(c)._callRefreshToken(token);
  return Promise.allSettled([call(), call()]);
}

const G = "GoTrueClient > ";
const S = `${G}Sessions > `;
const E = `${G}Email Auth > `;
const O = `${G}signInWithOtp > `;

upstream("GoTrueClient.test.ts", import.meta.url, [
  ported(`${G}should handle debug function in settings`, async () => {
    const lines: unknown[][] = [];
    const c = client({ debug: (...args: unknown[]) => void lines.push(args) });
    await c.initialize();
    assert.ok(lines.length > 0, "the debug function was called");
  }),
  ported(`${G}should handle custom lock implementation`, async () => {
    let taken = 0;
    const c = client({
      lock: <R>(_name: string, _timeout: number, fn: () => Promise<R>) => {
        taken++;
        return fn();
      },
    });
    await c.initialize();
    assert.ok(taken > 0, "the custom lock was used");
  }),
  ported(`${G}should handle userStorage configuration`, async () => {
    const userStorage = new MemoryStorage();
    const c = client({ userStorage });
    await c.initialize();
    assert.equal(internals(c).userStorage, userStorage);
  }),

  ported(
    `${S}refreshSession() should return a new session using a passed-in refresh token`,
    async () => {
      const { c, session } = await signedUp();
      const refreshes = spy(internals(c), "_refreshAccessToken");
      const old = session as Session;
      const { data, error } = await c.refreshSession({ refresh_token: old.refresh_token });
      assert.equal(error, null);
      const s = data.session!;
      assert.ok(s.user && s.expires_in && s.expires_at && s.access_token && s.refresh_token);
      assert.equal(s.token_type, "bearer");
      assert.equal(refreshes.calls.length, 1);
      assert.notEqual(s.refresh_token, old.refresh_token, "the refresh token rotated");
    },
  ),
  ported(
    `${S}refreshSession() should return a new session without a passed-in refresh token`,
    async () => {
      const { c, session } = await signedUp();
      const refreshes = spy(internals(c), "_refreshAccessToken");
      const { data, error } = await c.refreshSession();
      assert.equal(error, null);
      const s = data.session!;
      assert.ok(s.user && s.expires_in && s.expires_at && s.access_token && s.refresh_token);
      assert.equal(s.token_type, "bearer");
      assert.equal(refreshes.calls.length, 1);
      assert.notEqual(s.refresh_token, (session as Session).refresh_token);
    },
  ),
  ported(`${S}setSession should return no error`, async () => {
    const { c, session } = await signedUp();
    const { access_token, refresh_token } = session as Session;
    const { data, error } = await c.setSession({ access_token, refresh_token });
    assert.equal(error, null);
    const s = data.session!;
    assert.ok(s.user && s.expires_in && s.expires_at && s.access_token && s.refresh_token);
    assert.equal(s.token_type, "bearer");
    // setSession also keeps the session: getSession sees it and updateUser works with it
    const kept = await c.getSession();
    assert.equal(kept.error, null);
    assert.ok(kept.data);
    const updated = await c.updateUser({ data: { hello: "world" } });
    assert.equal(updated.error, null);
    assert.equal(updated.data.user?.user_metadata.hello, "world");
  }),
  ported(`${S}setSession should fail with invalid access token`, async () => {
    const { c, session } = await signedUp();
    const { data, error } = await c.setSession({
      access_token: "invalid-access-token",
      refresh_token: (session as Session).refresh_token,
    });
    assert.match(String(error?.message), /Invalid JWT structure/);
    assert.equal(data.session, null);
  }),
  ported(`${S}setSession should fail with invalid refresh token`, async () => {
    const { c } = await signedUp();
    const { data, error } = await c.setSession({
      access_token: await expiredJwt(),
      refresh_token: "invalid-refresh-token",
    });
    // upstream accepts either wording (GoTrue versions differ); ours is GoTrue's current one
    assert.match(String(error?.message), /Invalid Refresh Token|Refresh token is not valid/);
    assert.equal(data.session, null);
  }),
  ported(`${S}setSession should fail without refresh_token`, async () => {
    const { data, error } = await client().setSession(
      { access_token: "valid-access-token" } as unknown as Session,
    );
    assert.match(String(error?.message), /Auth session missing!/);
    assert.equal(data.session, null);
  }),
  ported(`${S}setSession should fail without access_token`, async () => {
    const { data, error } = await client().setSession(
      { refresh_token: "valid-refresh-token" } as unknown as Session,
    );
    assert.match(String(error?.message), /Auth session missing!/);
    assert.equal(data.session, null);
  }),
  ported(`${S}getSession() should return the currentUser session`, async () => {
    const { c } = await signedUp();
    const { data, error } = await c.getSession();
    assert.equal(error, null);
    assert.ok(data.session?.access_token);
    assert.ok(data.session.user);
  }),
  ported(`${S}getSession() should refresh the session and return a new access token`, async () => {
    const { c, session } = await signedUp();
    const { storage, key } = storageOf(c);
    const stored = JSON.parse((await storage.getItem(key))!);
    const expired = Math.floor(Date.now() / 1000) - 60;
    await storage.setItem(key, JSON.stringify({ ...stored, expires_at: expired }));
    const refreshes = spy(internals(c), "_refreshAccessToken");
    const { data, error } = await c.getSession();
    assert.equal(error, null);
    assert.ok(data.session?.access_token);
    assert.equal(refreshes.calls.length, 1, "the expired session was refreshed");
    // Upstream waits a second so that the new access token differs; a token minted within the
    // same second as the old one can be byte-equal here as there, so the refresh shows instead
    // in the rotated refresh token and the new expiry.
    assert.notEqual(data.session.refresh_token, (session as Session).refresh_token);
    assert.ok(data.session.expires_at! > expired + 60);
  }),
  ported(`${S}getSession() returns null when no session is stored`, async () => {
    const { data, error } = await client().getSession();
    assert.equal(data.session, null);
    assert.equal(error, null);
  }),
  ported(`${S}refresh should only happen once`, async () => {
    const { c, session } = await signedUp();
    const refreshes = spy(internals(c), "_refreshAccessToken");
    const [a, b] = await twoRefreshes(c, (session as Session).refresh_token);
    assert.ok(a.status === "fulfilled" && b.status === "fulfilled");
    assert.equal(a.value.error, null);
    assert.equal(b.value.error, null);
    assert.ok(a.value.data.access_token);
    // one refresh served both callers
    assert.equal(a.value.data.access_token, b.value.data.access_token);
    assert.equal(refreshes.calls.length, 1);
  }),
  ported(
    `${S}_callRefreshToken() should resolve all pending refresh requests and reset deferred upon AuthError`,
    async () => {
      const { c, session } = await signedUp();
      const refreshes = spy(
        internals(c),
        "_refreshAccessToken",
        () =>
          Promise.resolve({
            data: { session: null, user: null },
            error: new AuthError("Something did not work as expected"),
          }),
      );
      const token = (session as Session).refresh_token;
      const [a, b] = await twoRefreshes(c, token);
      assert.ok(a.status === "fulfilled" && b.status === "fulfilled");
      assert.ok(a.value.error?.message && b.value.error?.message);
      assert.equal(a.value.data, null);
      assert.equal(b.value.data, null);
      assert.equal(refreshes.calls.length, 1);
      // as upstream: clear the failure cooldown to see that the deferred itself was reset
      internals(c).lastRefreshFailure = null;
      const third = await internals(c)._callRefreshToken(token);
      assert.equal(third.error, null);
      assert.ok(third.data.access_token);
    },
  ),
  ported(
    `${S}_callRefreshToken() should reject all pending refresh requests and reset deferred upon any non AuthError`,
    async () => {
      const { c, session } = await signedUp();
      const failure = new Error("Something did not work as expected");
      const refreshes = spy(internals(c), "_refreshAccessToken", () => Promise.reject(failure));
      const token = (session as Session).refresh_token;
      const [a, b] = await twoRefreshes(c, token);
      assert.ok(a.status === "rejected" && b.status === "rejected");
      assert.equal(a.reason, failure);
      assert.equal(b.reason, failure);
      assert.equal(refreshes.calls.length, 1);
      const third = await internals(c)._callRefreshToken(token);
      assert.equal(third.error, null);
      assert.ok(third.data.access_token);
    },
  ),
  ported(`${S}_getSessionFromURL() can only be called from a browser`, async () => {
    const { data, error } = await internals(client())._getSessionFromURL();
    assert.equal(error?.message, "No browser detected.");
    assert.equal(data.session, null);
  }),
  ported(`${S}exchangeCodeForSession() should fail with invalid authCode`, async () => {
    const { c, storage, key } = stubbed(
      () => json({ error: "invalid_grant", error_description: "Invalid auth code" }, 400),
      { flowType: "pkce" },
    );
    await storage.setItem(`${key}-code-verifier`, "mock-verifier");
    const { error } = await c.exchangeCodeForSession("mock_code");
    assert.equal(error?.status, 400);
  }),
  ported(
    `${S}exchangeCodeForSession() should throw helpful error when code verifier is missing`,
    async () => {
      const { error } = await client({ flowType: "pkce" }).exchangeCodeForSession("some-code");
      assert.ok(error instanceof AuthPKCECodeVerifierMissingError);
      assert.match(error.message, /PKCE code verifier not found in storage/);
      assert.match(error.message, /@supabase\/ssr/);
      assert.equal(error.code, "pkce_code_verifier_not_found");
    },
  ),

  ported(`${E}signUp() with email`, async () => {
    const { email, password } = creds();
    const { data, error } = await client().signUp({ email, password });
    assert.equal(error, null);
    assert.ok(data.session);
    assert.equal(data.user?.email, email);
  }),
  ported(`${E}signUp() with email and PKCE flowType`, async () => {
    const { email, password } = creds();
    const { data, error } = await client({ flowType: "pkce" }).signUp({ email, password });
    assert.equal(error, null);
    assert.ok(data.session);
    assert.equal(data.user?.email, email);
  }),
  ported(`${E}signUp() with email and options`, async () => {
    const { email, password } = creds();
    const { data, error } = await client().signUp({
      email,
      password,
      options: { emailRedirectTo: email, data: { ...TEST_USER_DATA } },
    });
    assert.equal(error, null);
    assert.ok(data.session);
    assert.equal(data.user?.email, email);
    assert.equal(data.user?.user_metadata.info, TEST_USER_DATA.info);
  }),
  ported(
    `${E}signUp() returns the bare user payload when signup requires confirmation`,
    async () => {
      const user = {
        id: "user-id",
        aud: "authenticated",
        role: "authenticated",
        email: "user@example.com",
        created_at: "2026-05-21T12:00:00.000Z",
      };
      const { c } = stubbed(() => json(user));
      const { data, error } = await c.signUp({ email: user.email, password: "password123" });
      assert.equal(error, null);
      assert.equal(data.session, null);
      assert.deepEqual(data.user, user);
    },
  ),
  ported(`${E}fail to signUp() with invalid password`, async () => {
    const { data, error } = await client().signUp({ email: "asd@a.aa", password: "123" });
    assert.equal(data.session, null);
    assert.match(String(error?.message), /Password should be at least 6 characters/);
  }),
  ported(`${E}fail to signUp() with invalid email`, async () => {
    const { data, error } = await client().signUp({ email: "a", password: "123456" });
    assert.equal(data.session, null);
    assert.match(String(error?.message), /Unable to validate email address: invalid format/);
  }),
  ported(`${E}resend with email with options`, async () => {
    const { error } = await client().resend({
      email: creds().email,
      type: "signup",
      options: { emailRedirectTo: creds().email },
    });
    assert.equal(error, null);
  }),
  ported(`${E}resend with email with empty options`, async () => {
    const { error } = await client().resend({ email: creds().email, type: "signup", options: {} });
    assert.equal(error, null);
  }),
  ported(`${E}resend with email and PKCE flowType includes code_challenge in request`, async () => {
    const { c, storage, key, calls } = stubbed(() => json({}), { flowType: "pkce" });
    const { error } = await c.resend({
      email: creds().email,
      type: "signup",
      options: { emailRedirectTo: "http://localhost:9999/welcome" },
    });
    assert.equal(error, null);
    assert.equal(calls.length, 1);
    assert.ok(calls[0].body?.code_challenge, "a code challenge is sent");
    assert.equal(calls[0].body?.code_challenge_method, "s256");
    assert.ok(await storage.getItem(`${key}-code-verifier`), "its verifier is kept");
  }),
  ported(
    `${E}resend with email_change type and PKCE flowType includes code_challenge`,
    async () => {
      const { c, storage, key, calls } = stubbed(() => json({}), { flowType: "pkce" });
      const { error } = await c.resend({ email: "newemail@example.com", type: "email_change" });
      assert.equal(error, null);
      assert.equal(calls.length, 1);
      assert.ok(calls[0].body?.code_challenge);
      assert.equal(calls[0].body?.code_challenge_method, "s256");
      assert.equal(calls[0].body?.type, "email_change");
      assert.ok(await storage.getItem(`${key}-code-verifier`));
    },
  ),
  ported(`${E}resend with PKCE cleans up code verifier on HTTP error`, async () => {
    const { c, storage, key } = stubbed(
      () => json({ error: "bad_request", error_description: "Invalid email" }, 400),
      { flowType: "pkce" },
    );
    const { error } = await c.resend({ email: "bad@example.com", type: "signup" });
    assert.ok(error);
    assert.equal(await storage.getItem(`${key}-code-verifier`), null, "the verifier is gone");
  }),
  ported(`${E}resend without PKCE does not include code_challenge in request`, async () => {
    const { c, calls } = stubbed(() => json({}));
    const { error } = await c.resend({ email: "test@example.com", type: "signup" });
    assert.equal(error, null);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].body?.code_challenge, null);
    assert.equal(calls[0].body?.code_challenge_method, null);
  }),
  ported(`${E}resend() fails without email or phone`, async () => {
    // deno-lint-ignore no-explicit-any
    const { error } = await client().resend({} as any);
    assert.match(String(error?.message), /You must provide either an email or phone number/);
  }),
  ported(`${E}signUp() should fail when both email and phone are missing`, async () => {
    // deno-lint-ignore no-explicit-any
    const { data, error } = await client().signUp({ password: "password123" } as any);
    assert.match(
      String(error?.message),
      /You must provide either an email or phone number and a password/,
    );
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(`${E}should handle signUp with invalid credentials`, async () => {
    const { data, error } = await client().signUp({ email: "invalid-email", password: "123" });
    assert.ok(error);
    assert.equal(data.user, null);
    assert.equal(data.session, null);
  }),
  ported(`${E}should handle signInWithPassword with invalid credentials`, async () => {
    const { data, error } = await client().signInWithPassword({
      email: "nonexistent@example.com",
      password: "wrongpassword",
    });
    assert.ok(error);
    assert.equal(data.user, null);
    assert.equal(data.session, null);
  }),
  ported(`${E}should handle signInWithOAuth with invalid provider`, async () => {
    const { data, error } = await client().signInWithOAuth({
      // deno-lint-ignore no-explicit-any
      provider: "invalid-provider" as any,
    });
    // the client builds the URL without asking the server
    assert.equal(error, null);
    assert.ok(data.url);
  }),
  ported(`${E}should handle signInWithOtp with invalid email`, async () => {
    const { data, error } = await client().signInWithOtp({ email: "invalid-email" });
    assert.ok(error);
    assert.equal(data.user, null);
  }),
  ported(`${E}should handle signInWithOtp with invalid phone`, async () => {
    const { data, error } = await client().signInWithOtp({ phone: "invalid-phone" });
    assert.ok(error);
    assert.equal(data.user, null);
  }),
  ported(`${E}should handle verifyOtp with invalid code`, async () => {
    const { data, error } = await client().verifyOtp({
      email: "test@example.com",
      token: "invalid-token",
      type: "email",
    });
    assert.ok(error);
    assert.equal(data.user, null);
    assert.equal(data.session, null);
  }),
  ported(
    `${E}verifyOtp() returns null user and session for email_change single-confirmation response`,
    async () => {
      // What GoTrue (and this server) answers to the first of two secure e-mail change links.
      const { c } = stubbed(() =>
        json({
          code: "200",
          msg: "Confirmation link accepted. Please proceed to confirm link sent to the other email",
        })
      );
      const { data, error } = await c.verifyOtp({ token_hash: "token-hash", type: "email_change" });
      assert.equal(error, null);
      assert.equal(data.user, null);
      assert.equal(data.session, null);
    },
  ),

  ported(`${O}signInWithOtp() for email`, async () => {
    const { data, error } = await client().signInWithOtp({
      email: creds().email,
      options: { data: { hello: "world" } },
    });
    assert.equal(error, null);
    assert.equal(data.user, null);
    assert.equal(data.session, null);
  }),
  ported(`${O}signInWithOtp for email with empty options`, async () => {
    const { data, error } = await client().signInWithOtp({ email: creds().email, options: {} });
    assert.equal(error, null);
    assert.equal(data.user, null);
    assert.equal(data.session, null);
  }),
  ported(`${O}verifyOTP fails with empty options`, async () => {
    const { error } = await client().verifyOtp({
      phone: creds().phone,
      type: "phone_change",
      token: "123456",
      options: {},
    });
    assert.match(String(error?.message), /Token has expired or is invalid/);
  }),
  ported(`${O}signInWithOtp() pkce flow fails with invalid sms provider`, async () => {
    // the CLI instance has phone sign-in on but no SMS provider
    const { data, error } = await client({ flowType: "pkce" }).signInWithOtp({
      phone: creds().phone,
    });
    assert.ok(error);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(`${O}signInWithOtp() should fail when both email and phone are missing`, async () => {
    const { data, error } = await client().signInWithOtp(
      // deno-lint-ignore no-explicit-any
      { options: { data: { hello: "world" } } } as any,
    );
    assert.match(String(error?.message), /You must provide either an email or phone number/);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),
  ported(`${O}signInWithOtp() with PKCE flow should return error`, async () => {
    const { email } = creds();
    const { data, error } = await client({ flowType: "pkce" }).signInWithOtp({
      email,
      options: { shouldCreateUser: false, captchaToken: "some_token", emailRedirectTo: email },
    });
    // no such user, and shouldCreateUser false
    assert.ok(error);
    assert.equal(data.session, null);
    assert.equal(data.user, null);
  }),

  ported(
    `${G}signUp() the same user twice should not share email already registered message`,
    async () => {
      const { email, password } = creds();
      await client().signUp({ email, password });
      const { data, error } = await client().signUp({ email, password });
      assert.equal(data.session, null);
      assert.equal(data.user, null);
      assert.match(String(error?.message), /^User already registered/);
    },
  ),
  ported(`${G}signInWithPassword() for email`, async () => {
    const c = client();
    const { email, password } = creds();
    await c.signUp({ email, password });
    const { data, error } = await c.signInWithPassword({ email, password });
    assert.equal(error, null);
    assertSession(data.session, email);
    assertTypes(data.user, USER_SHAPE);
    assert.equal(data.user?.app_metadata.provider, "email");
    assert.equal(data.user?.email, email);
  }),
  ported(`${G}signIn() with refreshToken`, async () => {
    const { c, email } = await signedUp();
    const { data, error } = await c.getSession();
    assert.equal(error, null);
    assertSession(data.session, email);
  }),
]);

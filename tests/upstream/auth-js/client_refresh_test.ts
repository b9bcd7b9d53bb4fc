/**
 * Ported from auth-js test/GoTrueClient.test.ts: how the client coordinates refreshes without a
 * lock, initialization that calls back into the client, the commit guard against a sign-out
 * racing a refresh, and the refresh-token lifecycle (what is kept on which failure, the failure
 * cooldown, what is logged). Upstream stubs the refresh itself here (`_refreshAccessToken`), so
 * these check the pinned client's own rules; the server's refresh is ported in
 * client_sessions_test.ts and GoTrue's conformance suite.
 */
import { memoryLocalStorageAdapter } from "@supabase/auth-js/dist/main/lib/local-storage.js";
import {
  AUTO_REFRESH_TICK_DURATION_MS,
  REFRESH_FAILURE_COOLDOWN_MS,
  STORAGE_KEY,
} from "@supabase/auth-js/dist/main/lib/constants.js";
import { getItemAsync, setItemAsync } from "@supabase/auth-js/dist/main/lib/helpers.js";
import { AuthError, GoTrueClient, type Session, type SupportedStorage } from "@supabase/auth-js";
import {
  assert,
  client,
  expiredJwt,
  INSTANCES,
  internals,
  logged,
  ported,
  signedUp,
  spy,
  upstream,
} from "./_helpers.ts";

type Storage = ReturnType<typeof memoryLocalStorageAdapter>;

/** A stored session expiring in `seconds` (negative: already expired). */
async function plant(
  storage: Storage,
  seconds: number,
  refreshToken = "refresh-token-r1",
  user: Record<string, unknown> = { id: "user-1", email: "u@example.com" },
): Promise<Session> {
  const session = {
    access_token: "jwt.accesstoken.signature",
    refresh_token: refreshToken,
    token_type: "bearer",
    expires_in: seconds,
    expires_at: Math.floor(Date.now() / 1000) + seconds,
    user,
  } as unknown as Session;
  await setItemAsync(storage, STORAGE_KEY, session);
  return session;
}

/** A client of the CLI instance on `storage`, default storage key, no auto refresh. */
function on(storage: SupportedStorage, more: Record<string, unknown> = {}): GoTrueClient {
  return new GoTrueClient({
    url: INSTANCES.cli,
    storage,
    autoRefreshToken: false,
    persistSession: true,
    ...more,
  });
}

/** An initialized client on fresh storage, holding a session expiring in `seconds` if given. */
async function ready(seconds?: number): Promise<{ storage: Storage; c: GoTrueClient }> {
  const storage = memoryLocalStorageAdapter();
  const c = on(storage);
  await c.initialize();
  if (seconds !== undefined) await plant(storage, seconds);
  return { storage, c };
}

/** The refresh token in storage now, or undefined. */
async function storedRefresh(storage: Storage): Promise<string | undefined> {
  return ((await getItemAsync(storage, STORAGE_KEY)) as Session | null)?.refresh_token;
}

/** The refresh of r1 by a client holding a session expiring in `seconds`, failing as `kind`. */
async function failedRefresh(seconds: number, kind: "invalid_grant" | "network" = "invalid_grant") {
  const { storage, c } = await ready(seconds);
  failRefresh(c, kind);
  return { storage, result: await internals(c)._callRefreshToken("refresh-token-r1") };
}

/** An AuthError as auth-js builds it from an answer, with `name` and `code`. */
function apiError(message: string, status: number, name: string, code?: string) {
  return Object.assign(new AuthError(message, status), {
    name,
    ...(code ? { code } : {}),
    __isAuthError: true,
  });
}

/** Replaces the refresh with one answering `error` (GoTrue's refresh_token_already_used by default). */
function failRefresh(c: GoTrueClient, kind: "invalid_grant" | "network" = "invalid_grant") {
  const error = kind === "network"
    ? apiError("Failed to fetch", 0, "AuthRetryableFetchError")
    : apiError(
      "Invalid Refresh Token: Already Used",
      400,
      "AuthApiError",
      "refresh_token_already_used",
    );
  const calls: unknown[] = [];
  internals(c)._refreshAccessToken = (...args: unknown[]) => {
    calls.push(args);
    return Promise.resolve({ data: { session: null, user: null }, error });
  };
  return calls;
}

/** Replaces the refresh with one answering `session` after running `before`. */
function refreshTo(
  c: GoTrueClient,
  session: Record<string, unknown>,
  before?: () => Promise<void>,
) {
  internals(c)._refreshAccessToken = async () => {
    await before?.();
    return { data: { session, user: session.user }, error: null };
  };
}

const rotated = (refresh_token: string, user = { id: "user-1", email: "u@example.com" }) => ({
  access_token: "jwt.new.signature",
  refresh_token,
  token_type: "bearer",
  expires_in: 1000,
  expires_at: Math.floor(Date.now() / 1000) + 1000,
  user,
});

/** `promise`, or a rejection if it has not settled after `ms` (a deadlock would never settle). */
function settles<T>(promise: Promise<T>, ms = 5000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`deadlock: not settled within ${ms} ms`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** Runs `fn`; asserts it wrote a warning and no error to the console (upstream spies on both). */
async function warnsOnly(fn: () => Promise<unknown>): Promise<void> {
  let errors: unknown[][] = [];
  const warnings = await logged("warn", async () => {
    errors = await logged("error", fn);
  });
  assert.deepEqual(errors, []);
  assert.ok(warnings.length > 0);
}

/** A client (not yet initialized) over storage holding an expired session, its refresh failing. */
function expiredAtInit(kind: "invalid_grant" | "network") {
  const storage = memoryLocalStorageAdapter();
  return plant(storage, -60).then(() => {
    const c = on(storage, { skipAutoInitialize: true });
    failRefresh(c, kind);
    return c;
  });
}

const LK = "Lockless coordination (default) and legacy lock opt-in > ";
const IP = "initializePromise deadlock fix > ";
const CG = "Refresh commit guard (signOut-during-refresh race) > ";
const RL = "Refresh-token lifecycle (proactive/reactive, cooldown) > ";
const FA = `${RL}storage preservation (Fix A) > `;
const FB = `${RL}caller-visible preservation in getSession (Fix B) > `;
const EX = `${RL}explicit-caller contract (no semantic regression) > `;
const FC = `${RL}failure cooldown (Fix C) > `;
const CN = `${RL}console noise on transient failures > `;

upstream("GoTrueClient.test.ts", import.meta.url, [
  ported(
    `${LK}default path: no custom \`lock\` supplied, _acquireLock is not invoked`,
    async () => {
      const c = client({ persistSession: false });
      const acquire = spy(internals(c), "_acquireLock");
      await c.initialize();
      await c.getSession();
      assert.equal(acquire.calls.length, 0);
    },
  ),
  ported(`${LK}legacy path: custom \`lock\` is invoked when supplied`, async () => {
    let taken = 0;
    const c = client({
      persistSession: false,
      lock: <R>(_n: string, _t: number, fn: () => Promise<R>) => {
        taken++;
        return fn();
      },
    });
    await c.initialize();
    await c.getSession();
    assert.ok(taken > 0);
  }),
  ported(
    `${LK}\`lockAcquireTimeout\` option is accepted (lockless path ignores it; legacy uses it)`,
    () => {
      assert.doesNotThrow(() => client({ persistSession: false, lockAcquireTimeout: 12345 }));
    },
  ),
  ported(`${LK}subscriber callback may call other auth methods without deadlock`, async () => {
    const { c } = await signedUp();
    const observed: string[] = [];
    let done!: () => void;
    const gotSession = new Promise<void>((resolve) => (done = resolve));
    const { data } = c.onAuthStateChange(async (event) => {
      observed.push(event);
      if (event === "INITIAL_SESSION") {
        const { data } = await c.getSession();
        observed.push(`got-session:${data.session ? "present" : "null"}`);
        done();
      }
    });
    // upstream sleeps 100 ms for the emit; here the callback itself says when it is through
    await settles(gotSession);
    data.subscription.unsubscribe();
    assert.ok(observed.includes("INITIAL_SESSION"));
    assert.ok(observed.some((s) => s.startsWith("got-session:")));
  }),

  ported(
    `${IP}getSession() inside SIGNED_IN callback (valid session at init) resolves without deadlock`,
    async () => {
      const storage = memoryLocalStorageAdapter();
      // 120 s is past auth-js's 90 s expiry margin: valid, no refresh at init
      await plant(storage, 120, "refresh-token-init-test", {
        id: "user-init",
        email: "init@example.com",
      });
      const c = on(storage, { skipAutoInitialize: true });
      let fromCallback: Session | null | undefined;
      c.onAuthStateChange(async (event) => {
        if (event === "SIGNED_IN") fromCallback = (await c.getSession()).data.session;
      });
      assert.ok((await settles(c.initialize())) !== undefined);
      assert.notEqual(fromCallback, undefined);
      assert.notEqual(fromCallback, null);
    },
  ),
  ported(
    `${IP}getSession() inside TOKEN_REFRESHED callback (near-expiry session at init) resolves without deadlock`,
    async () => {
      const storage = memoryLocalStorageAdapter();
      await plant(storage, 60, "refresh-token-init-test", {
        id: "user-init",
        email: "init@example.com",
      });
      const c = on(storage, { autoRefreshToken: true, skipAutoInitialize: true });
      refreshTo(c, {
        ...rotated("new-refresh-token", { id: "user-init", email: "init@example.com" }),
        access_token: "new.access.token",
        expires_in: 3600,
        expires_at: Math.floor(Date.now() / 1000) + 3600,
      });
      let fromCallback: Session | null | undefined;
      c.onAuthStateChange(async (event) => {
        if (event === "TOKEN_REFRESHED") fromCallback = (await c.getSession()).data.session;
      });
      assert.ok((await settles(c.initialize())) !== undefined);
      assert.notEqual(fromCallback, undefined);
      await c.dispose();
    },
  ),
  ported(
    `${IP}initialize() fires SIGNED_IN after initializePromise resolves (getSession works in callback)`,
    async () => {
      const storage = memoryLocalStorageAdapter();
      await plant(storage, 120, "refresh-token-init-test", {
        id: "user-init",
        email: "init@example.com",
      });
      const c = on(storage, { skipAutoInitialize: true });
      let initSetDuringCallback = false;
      c.onAuthStateChange((event) => {
        if (event === "SIGNED_IN") initSetDuringCallback = internals(c).initializePromise !== null;
      });
      await settles(c.initialize());
      assert.equal(initSetDuringCallback, true);
    },
  ),

  ported(`${CG}discards rotated tokens when storage was cleared mid-flight`, async () => {
    const { storage, c } = await ready(1000);
    // a concurrent sign-out clears storage while the refresh is on its way
    refreshTo(c, rotated("refresh-token-r2"), () => internals(c)._removeSession());
    const result = await internals(c)._callRefreshToken("refresh-token-r1");
    assert.equal(result.error?.name, "AuthRefreshDiscardedError");
    assert.equal(await storage.getItem(STORAGE_KEY), null, "the rotated tokens were not written");
  }),
  ported(`${CG}accepts rotated tokens when storage was empty at fetch start`, async () => {
    const { storage, c } = await ready();
    assert.equal(await storage.getItem(STORAGE_KEY), null);
    refreshTo(c, rotated("refresh-token-r2"));
    const result = await internals(c)._callRefreshToken("R-external");
    assert.equal(result.error, null);
    assert.equal(result.data?.refresh_token, "refresh-token-r2");
    assert.equal(
      await storedRefresh(storage),
      "refresh-token-r2",
    );
  }),
  ported(
    `${CG}accepts rotated tokens when storage holds a different session than the input refresh_token`,
    async () => {
      const { storage, c } = await ready();
      await plant(storage, 1000, "refresh-token-a", { id: "user-a", email: "a@example.com" });
      refreshTo(c, rotated("refresh-token-b-rotated", { id: "user-b", email: "b@example.com" }));
      const result = await internals(c)._callRefreshToken("refresh-token-b");
      assert.equal(result.error, null);
      assert.equal(result.data?.refresh_token, "refresh-token-b-rotated");
      assert.equal(
        await storedRefresh(storage),
        "refresh-token-b-rotated",
      );
    },
  ),
  ported(
    `${CG}discards rotated tokens when a different session was written to storage mid-flight`,
    async () => {
      const { storage, c } = await ready();
      const a = await plant(storage, 1000, "refresh-token-a", {
        id: "user-a",
        email: "a@example.com",
      });
      // another tab stores session B while A's refresh is on its way
      refreshTo(
        c,
        { ...a, access_token: "jwt.a-rotated.signature", refresh_token: "refresh-token-a-rotated" },
        () =>
          setItemAsync(storage, STORAGE_KEY, {
            ...a,
            refresh_token: "refresh-token-b-from-other-tab",
          }),
      );
      const result = await internals(c)._callRefreshToken("refresh-token-a");
      assert.equal(result.error?.name, "AuthRefreshDiscardedError");
      assert.equal(
        await storedRefresh(storage),
        "refresh-token-b-from-other-tab",
      );
    },
  ),

  ported(
    `${FA}non-retryable refresh failure + access token still valid → storage preserved`,
    async () => {
      const { storage, result } = await failedRefresh(60);
      assert.equal(result.data, null);
      assert.equal(result.error?.code, "refresh_token_already_used");
      assert.equal(
        await storedRefresh(storage),
        "refresh-token-r1",
      );
    },
  ),
  ported(
    `${FA}non-retryable refresh failure + access token already expired → storage cleared`,
    async () => {
      const { storage, result } = await failedRefresh(-60);
      assert.equal(result.data, null);
      assert.equal(result.error?.code, "refresh_token_already_used");
      assert.equal(await getItemAsync(storage, STORAGE_KEY), null);
    },
  ),
  ported(
    `${FA}retryable (network) refresh failure → storage preserved regardless of expiry`,
    async () => {
      const { storage, result } = await failedRefresh(-60, "network");
      assert.equal(result.error?.name, "AuthRetryableFetchError");
      assert.equal(
        await storedRefresh(storage),
        "refresh-token-r1",
      );
    },
  ),
  ported(
    `${FB}proactive refresh failure + access token still valid → returns preserved session`,
    async () => {
      const { storage, c } = await ready();
      // inside auth-js's expiry margin, so getSession refreshes, yet still valid
      await plant(storage, 30);
      failRefresh(c);
      const { data, error } = await c.getSession();
      assert.equal(error, null);
      assert.equal(data.session?.access_token, "jwt.accesstoken.signature");
      assert.equal(data.session?.refresh_token, "refresh-token-r1");
    },
  ),
  ported(
    `${FB}reactive refresh failure (access token already expired) → returns null + error`,
    async () => {
      const { c } = await ready(-60);
      failRefresh(c);
      const { data, error } = await c.getSession();
      assert.equal(data.session, null);
      assert.equal((error as AuthError | null)?.code, "refresh_token_already_used");
    },
  ),
  ported(`${FB}race guard: storage cleared during refresh → returns null + error`, async () => {
    const { storage, c } = await ready(30);
    internals(c)._refreshAccessToken = async () => {
      await storage.removeItem(STORAGE_KEY);
      return {
        data: { session: null, user: null },
        error: apiError("Invalid Refresh Token", 400, "AuthApiError", "refresh_token_already_used"),
      };
    };
    const { data, error } = await c.getSession();
    assert.equal(data.session, null);
    assert.ok(error);
  }),
  ported(`${EX}refreshSession() on proactive-preserve scenario still returns error`, async () => {
    const { c } = await ready(60);
    failRefresh(c);
    const { data, error } = await c.refreshSession();
    assert.equal(data.session, null);
    assert.equal(data.user, null);
    assert.equal((error as AuthError | null)?.code, "refresh_token_already_used");
  }),
  ported(`${EX}setSession() whose refresh fails non-retryably still returns error`, async () => {
    const { c } = await ready();
    failRefresh(c);
    const { data, error } = await c.setSession({
      access_token: await expiredJwt(),
      refresh_token: "refresh-token-r1",
    });
    assert.equal(data.session, null);
    assert.ok(error);
  }),
  ported(
    `${FC}50 sequential _callRefreshToken calls during failure → exactly 1 /token`,
    async () => {
      const { c } = await ready(60);
      const calls = failRefresh(c);
      await internals(c)._callRefreshToken("refresh-token-r1");
      for (let i = 0; i < 50; i++) {
        const result = await internals(c)._callRefreshToken("refresh-token-r1");
        assert.equal(result.data, null);
        assert.equal(result.error?.code, "refresh_token_already_used");
      }
      assert.equal(calls.length, 1);
    },
  ),
  ported(`${FC}cooldown cleared after successful refresh`, async () => {
    const { c } = await ready(60);
    internals(c).lastRefreshFailure = {
      refreshToken: "refresh-token-r1",
      result: {
        data: null,
        error: apiError("stale", 400, "AuthApiError", "refresh_token_already_used"),
      },
      expiresAt: Date.now() + 30_000,
    };
    refreshTo(c, { ...rotated("refresh-token-r2"), expires_in: 3600 });
    const cached = await internals(c)._callRefreshToken("refresh-token-r1");
    assert.ok(cached.error, "inside the cooldown the cached failure is answered");
    internals(c).lastRefreshFailure = null;
    const fresh = await internals(c)._callRefreshToken("refresh-token-r1");
    assert.equal(fresh.error, null);
    assert.equal(fresh.data?.refresh_token, "refresh-token-r2");
    assert.equal(internals(c).lastRefreshFailure, null);
  }),
  ported(`${FC}cooldown cleared inside _removeSession`, async () => {
    const { c } = await ready(60);
    internals(c).lastRefreshFailure = {
      refreshToken: "refresh-token-r1",
      result: {
        data: null,
        error: apiError("x", 400, "AuthApiError", "refresh_token_already_used"),
      },
      expiresAt: Date.now() + 30_000,
    };
    await internals(c)._removeSession();
    assert.equal(internals(c).lastRefreshFailure, null);
  }),
  ported(
    `${FC}cooldown expires after REFRESH_FAILURE_COOLDOWN_MS and next call fires /token`,
    async () => {
      const { c } = await ready(600);
      const calls = failRefresh(c);
      await internals(c)._callRefreshToken("refresh-token-r1");
      assert.equal(calls.length, 1);
      await internals(c)._callRefreshToken("refresh-token-r1");
      assert.equal(calls.length, 1, "inside the cooldown: no new refresh");
      // upstream moves Jest's fake clock; here Date.now is moved past the cooldown
      const realNow = Date.now;
      const later = realNow() + REFRESH_FAILURE_COOLDOWN_MS + 1000;
      Date.now = () => later;
      try {
        await internals(c)._callRefreshToken("refresh-token-r1");
      } finally {
        Date.now = realNow;
      }
      assert.equal(calls.length, 2, "past the cooldown: a new refresh");
    },
  ),
  ported(`${FC}REFRESH_FAILURE_COOLDOWN_MS is two auto-refresh ticks`, () => {
    assert.equal(REFRESH_FAILURE_COOLDOWN_MS, 2 * AUTO_REFRESH_TICK_DURATION_MS);
  }),
  ported(
    `${FC}cooldown is keyed by refresh token — different token bypasses the cache`,
    async () => {
      const { c } = await ready(60);
      const calls = failRefresh(c);
      await internals(c)._callRefreshToken("refresh-token-A");
      assert.equal(calls.length, 1);
      await internals(c)._callRefreshToken("refresh-token-A");
      assert.equal(calls.length, 1);
      await internals(c)._callRefreshToken("refresh-token-B");
      assert.equal(calls.length, 2);
    },
  ),
  ported(
    `${RL}init cleanup (no double SIGNED_OUT) > _recoverAndRefresh non-retryable failure emits SIGNED_OUT exactly once`,
    async () => {
      const storage = memoryLocalStorageAdapter();
      await plant(storage, -60);
      const c = on(storage, { autoRefreshToken: true, skipAutoInitialize: true });
      failRefresh(c);
      const events: string[] = [];
      c.onAuthStateChange((event) => void events.push(event));
      await c.initialize();
      assert.equal(events.filter((e) => e === "SIGNED_OUT").length, 1);
      await c.dispose();
    },
  ),
  ported(
    `${CN}_emitInitialSession downgrades a retryable network failure to console.warn`,
    async () => {
      const c = await expiredAtInit("network");
      await c.initialize();
      await warnsOnly(() => internals(c)._emitInitialSession(Symbol("test-transient-init")));
    },
  ),
  ported(
    `${CN}_emitInitialSession downgrades an expired/rotated refresh token to console.warn`,
    async () => {
      const c = await expiredAtInit("invalid_grant");
      await c.initialize();
      await warnsOnly(() => internals(c)._emitInitialSession(Symbol("test-invalid-grant-init")));
    },
  ),
  ported(
    `${CN}_recoverAndRefresh downgrades a retryable failure in its outer catch to console.warn`,
    async () => {
      const { storage, c } = await ready();
      spy(storage, "getItem", () => {
        throw apiError("Failed to fetch", 0, "AuthRetryableFetchError");
      });
      await warnsOnly(() => internals(c)._recoverAndRefresh());
    },
  ),
  ported(
    `${CN}_recoverAndRefresh still logs a genuine (non-retryable) error via console.error`,
    async () => {
      const { storage, c } = await ready();
      spy(storage, "getItem", () => {
        throw new Error("boom");
      });
      const errors = await logged("error", () => internals(c)._recoverAndRefresh());
      assert.ok(errors.length > 0);
    },
  ),
]);

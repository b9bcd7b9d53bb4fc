/**
 * Ported from auth-js test/GoTrueClient.pkce.test.ts: several PKCE flows at once, each keeping its
 * code verifier in a slot of its own. Upstream runs these against a stubbed `fetch` (no server):
 * flow starts succeed, code exchanges fail with invalid_grant unless told to succeed, and every
 * request is recorded. So do these; the PKCE exchange against the server is in
 * tests/server/email/pkce_test.ts and tests/conformance/.
 */
import { memoryLocalStorageAdapter } from "@supabase/auth-js/dist/main/lib/local-storage.js";
import { PKCE_FLOW_ID_PARAM } from "@supabase/auth-js/dist/main/lib/constants.js";
import { getItemAsync } from "@supabase/auth-js/dist/main/lib/helpers.js";
import {
  AuthPKCECodeVerifierMissingError,
  GoTrueClient,
  type SupportedStorage,
} from "@supabase/auth-js";
import { assert, internals, json, ported, recordingFetch, upstream } from "./_helpers.ts";

const AUTH_URL = "https://project-ref.supabase.example/auth/v1";
const CALLBACK = "https://app.example.test/auth/callback";

const SESSION = {
  access_token: "synthetic-access-token",
  token_type: "bearer",
  expires_in: 3600,
  refresh_token: "synthetic-refresh-token",
  user: {
    id: "11111111-1111-1111-1111-111111111111",
    aud: "authenticated",
    role: "authenticated",
    email: "user@example.test",
    app_metadata: {},
    user_metadata: {},
    created_at: "2024-01-01T00:00:00Z",
    updated_at: "2024-01-01T00:00:00Z",
  },
};

/** A PKCE client on a stubbed fetch, with what it stored and what it sent. */
function pkce(opts: {
  store?: Record<string, string>;
  flowIdInRedirects?: boolean;
  storage?: SupportedStorage;
  exchangeSucceeds?: boolean;
} = {}) {
  const store = opts.store ?? {};
  const storage = opts.storage ?? memoryLocalStorageAdapter(store);
  const tokenBodies: Record<string, string>[] = [];
  const rec = recordingFetch((url, init) => {
    if (!url.includes("/token?grant_type=pkce")) return json({});
    tokenBodies.push(JSON.parse(String(init?.body)));
    return opts.exchangeSucceeds
      ? json({ ...SESSION })
      : json({ error: "invalid_grant", error_description: "Synthetic response" }, 400);
  });
  const c = new GoTrueClient({
    url: AUTH_URL,
    autoRefreshToken: false,
    persistSession: true,
    storage,
    flowType: "pkce",
    fetch: rec.fetch,
    experimental: opts.flowIdInRedirects ? { appendPkceFlowIdToRedirects: true } : undefined,
  });
  const storageKey: string = internals(c).storageKey;
  return { c, storage, store, storageKey, urls: () => rec.calls.map((x) => x.url), tokenBodies };
}

const slot = (storageKey: string, flowId: string) => `${storageKey}-flow-${flowId}-code-verifier`;
/** The keys of the verifier slots (the index of them excluded). */
const slots = (store: Record<string, string>, storageKey: string) =>
  Object.keys(store).filter((k) =>
    k.startsWith(`${storageKey}-flow-`) && k !== `${storageKey}-flows-code-verifier`
  );

/** The flow id carried on the redirect_to of an OAuth start URL. */
function flowIdOf(url: string): string {
  const redirectTo = new URL(url).searchParams.get("redirect_to");
  assert.ok(redirectTo);
  const id = new URL(redirectTo).searchParams.get(PKCE_FLOW_ID_PARAM);
  assert.ok(id);
  return id;
}

/** A sign-in through `provider` that returns its URL instead of navigating. */
function start(c: GoTrueClient, provider: "github" | "google", redirectTo = CALLBACK) {
  return c.signInWithOAuth({ provider, options: { redirectTo, skipBrowserRedirect: true } });
}

/** Storage like @supabase/ssr's server cookies: only `-code-verifier` keys reach `jar` at once. */
function ssrLike(jar: Record<string, string>): SupportedStorage {
  const buffered: Record<string, string> = {};
  const removed: Record<string, boolean> = {};
  return {
    getItem: (k: string) =>
      Promise.resolve(
        typeof buffered[k] === "string" ? buffered[k] : removed[k] ? null : jar[k] ?? null,
      ),
    setItem: (k: string, v: string) => {
      if (k.endsWith("-code-verifier")) jar[k] = v;
      buffered[k] = v;
      delete removed[k];
      return Promise.resolve();
    },
    removeItem: (k: string) => {
      delete buffered[k];
      removed[k] = true;
      return Promise.resolve();
    },
  };
}

const F = "overlapping PKCE flows > ";

upstream("GoTrueClient.pkce.test.ts", import.meta.url, [
  ported(`${F}two in-flight starts keep distinct verifiers in separate slots`, async () => {
    const { c, storage, store, storageKey } = pkce();
    await start(c, "github", `${CALLBACK}?flow=first`);
    const first = await getItemAsync(storage, `${storageKey}-code-verifier`);
    await start(c, "google", `${CALLBACK}?flow=second`);
    const second = await getItemAsync(storage, `${storageKey}-code-verifier`);
    const keys = slots(store, storageKey);
    assert.equal(keys.length, 2);
    assert.notDeepEqual(first, second);
    const values = await Promise.all(keys.map((k) => getItemAsync(storage, k)));
    assert.ok(values.some((v) => JSON.stringify(v) === JSON.stringify(first)));
    assert.ok(values.some((v) => JSON.stringify(v) === JSON.stringify(second)));
  }),
  ported(`${F}each callback exchanges its own verifier and cleans up only its slot`, async () => {
    const { c, storage, store, storageKey, tokenBodies } = pkce({ flowIdInRedirects: true });
    const { data: first } = await start(c, "github", `${CALLBACK}?flow=first`);
    const { data: second } = await start(c, "google", `${CALLBACK}?flow=second`);
    const firstId = flowIdOf(first.url!);
    const secondId = flowIdOf(second.url!);
    assert.notEqual(firstId, secondId);
    assert.equal(first.flowId, firstId, "the answer carries the flow id too");
    assert.equal(second.flowId, secondId);
    const firstVerifier = await getItemAsync(storage, slot(storageKey, firstId));
    const secondVerifier = await getItemAsync(storage, slot(storageKey, secondId));
    // the first flow's callback comes after the second start overwrote the fixed key
    await c.exchangeCodeForSession("code-from-first-flow", { flowId: firstId });
    assert.equal(tokenBodies.length, 1);
    assert.equal(tokenBodies[0].code_verifier, firstVerifier);
    assert.notEqual(tokenBodies[0].code_verifier, secondVerifier);
    assert.deepEqual(slots(store, storageKey), [slot(storageKey, secondId)]);
    assert.equal(await getItemAsync(storage, `${storageKey}-code-verifier`), secondVerifier);
    await c.exchangeCodeForSession("code-from-second-flow", { flowId: secondId });
    assert.equal(tokenBodies.length, 2);
    assert.equal(tokenBodies[1].code_verifier, secondVerifier);
    assert.deepEqual(slots(store, storageKey), []);
    assert.equal(await getItemAsync(storage, `${storageKey}-code-verifier`), null);
  }),
  ported(`${F}returns a usable flowId even without the experimental flag`, async () => {
    const { c, storage, storageKey, tokenBodies } = pkce();
    const { data: first } = await start(c, "github");
    assert.equal(new URL(first.url!).searchParams.get("redirect_to"), CALLBACK, "no flow id on it");
    assert.ok(first.flowId);
    await start(c, "google");
    const firstVerifier = await getItemAsync(storage, slot(storageKey, first.flowId!));
    await c.exchangeCodeForSession("code-from-first-flow", { flowId: first.flowId! });
    assert.equal(tokenBodies.length, 1);
    assert.equal(tokenBodies[0].code_verifier, firstVerifier);
  }),
  ported(
    `${F}fails fast when a flow id has no stored verifier instead of borrowing one`,
    async () => {
      const { c, storage, store, storageKey, tokenBodies } = pkce({ flowIdInRedirects: true });
      const { data } = await start(c, "github");
      const { error } = await c.exchangeCodeForSession("stale-code", {
        flowId: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      });
      assert.ok(error instanceof AuthPKCECodeVerifierMissingError);
      assert.equal(tokenBodies.length, 0, "no request went out with another flow's verifier");
      assert.deepEqual(slots(store, storageKey), [slot(storageKey, data.flowId!)]);
      assert.notEqual(await getItemAsync(storage, `${storageKey}-code-verifier`), null);
    },
  ),
  ported(`${F}falls back to the fixed key when no flow id is available`, async () => {
    const { c, storage, storageKey, tokenBodies } = pkce();
    // a flow an older auth-js started: the fixed key only
    await storage.setItem(`${storageKey}-code-verifier`, JSON.stringify("legacy-verifier"));
    await c.exchangeCodeForSession("some-code");
    assert.equal(tokenBodies.length, 1);
    assert.equal(tokenBodies[0].code_verifier, "legacy-verifier");
    assert.equal(await getItemAsync(storage, `${storageKey}-code-verifier`), null);
  }),
  ported(`${F}a successful exchange saves the session and consumes the slot`, async () => {
    const { c, storage, store, storageKey } = pkce({
      flowIdInRedirects: true,
      exchangeSucceeds: true,
    });
    const { data: started } = await start(c, "github");
    const { data, error } = await c.exchangeCodeForSession("good-code", {
      flowId: started.flowId!,
    });
    assert.equal(error, null);
    assert.equal(data.session?.access_token, "synthetic-access-token");
    const kept = (await getItemAsync(storage, storageKey)) as { access_token?: string };
    assert.equal(kept?.access_token, "synthetic-access-token");
    assert.deepEqual(slots(store, storageKey), []);
    assert.equal(await getItemAsync(storage, `${storageKey}-code-verifier`), null);
  }),
  ported(
    `${F}password recovery round-trips the flow id and keeps the /recovery marker`,
    async () => {
      const { c, storage, storageKey, urls, tokenBodies } = pkce({ flowIdInRedirects: true });
      await c.resetPasswordForEmail("user@example.test", {
        redirectTo: "https://app.example.test/auth/reset",
      });
      const recover = urls().find((u) => u.includes("/recover"))!;
      const redirectTo = new URL(recover).searchParams.get("redirect_to");
      const flowId = new URL(redirectTo!).searchParams.get(PKCE_FLOW_ID_PARAM);
      assert.ok(flowId, "the flow id travels on /recover's redirect_to");
      const stored = (await getItemAsync(storage, slot(storageKey, flowId))) as string;
      assert.match(stored, /\/recovery$/);
      await c.exchangeCodeForSession("recovery-code", { flowId });
      assert.equal(tokenBodies.length, 1);
      assert.equal(tokenBodies[0].code_verifier, stored.replace(/\/recovery$/, ""));
    },
  ),
  ported(
    `${F}detects a PKCE callback from the flow id slot even when the fixed key is gone`,
    async () => {
      const { c, storage, storageKey } = pkce({ flowIdInRedirects: true });
      const { data } = await start(c, "github");
      const flowId = flowIdOf(data.url!);
      // another exchange (an older auth-js, or one without a flow id) used the fixed key up
      await storage.removeItem(`${storageKey}-code-verifier`);
      assert.equal(
        await internals(c)._isPKCECallback({ code: "abc", [PKCE_FLOW_ID_PARAM]: flowId }),
        true,
      );
      assert.equal(await internals(c)._isPKCECallback({ code: "abc" }), false);
    },
  ),
  ported(`${F}bounds the number of stored verifier slots`, async () => {
    const { c, store, storageKey } = pkce();
    for (let i = 0; i < 7; i++) await start(c, "github");
    assert.equal(slots(store, storageKey).length, 5);
  }),
  ported(`${F}signOut clears every pending verifier slot and the index`, async () => {
    const { c, store, storageKey } = pkce();
    await start(c, "github");
    await start(c, "google");
    assert.equal(slots(store, storageKey).length, 2);
    await c.signOut();
    assert.deepEqual(slots(store, storageKey), []);
    assert.equal(store[`${storageKey}-flows-code-verifier`], undefined);
    assert.equal(store[`${storageKey}-code-verifier`], undefined);
  }),
  ported(`${F}persists slots through an ssr-server-like buffered storage adapter`, async () => {
    // a start on the server keeps only what reaches the cookie jar at once: hence every key of
    // the verifier family ends in -code-verifier
    const jar: Record<string, string> = {};
    const { c, storageKey } = pkce({ flowIdInRedirects: true, storage: ssrLike(jar) });
    const { data } = await start(c, "github");
    const flowId = data.flowId!;
    assert.ok(jar[slot(storageKey, flowId)]);
    assert.ok(jar[`${storageKey}-flows-code-verifier`]);
    assert.ok(jar[`${storageKey}-code-verifier`]);
    // the callback reaches a fresh server client that has only the cookies
    const callback = pkce({ storage: ssrLike(jar) });
    await callback.c.exchangeCodeForSession("some-code", { flowId });
    assert.equal(callback.tokenBodies.length, 1);
    assert.equal(callback.tokenBodies[0].code_verifier, JSON.parse(jar[slot(storageKey, flowId)]));
  }),
], { instances: false });

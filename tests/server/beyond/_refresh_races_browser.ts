/// <reference lib="deno.worker" />
/**
 * The browser and the app servers of tests/server/beyond/refresh_races_test.ts, in a worker of
 * their own so that fake timers (@sinonjs/fake-timers) can own this thread's Date, setTimeout
 * and setInterval while the auth server runs on real timers in the test's thread. The server's
 * clock reads the fake time from a shared buffer, written before every request.
 *
 * Unchanged @supabase/auth-js clients, one session, cycle after cycle; a cycle begins between
 * 90 s before the access token expires (auth-js's margin) and 90 s after it, and in it:
 * - 8 tabs share one storage (the browser's cookies or localStorage); each calls getSession()
 *   at a random moment of the first 30 s, as its auto-refresh tick does;
 * - in some cycles a page load sends 4 requests at once, 2 to each of 2 app servers, all with
 *   the cookie of that moment; in some a navigation sends one. Each request makes a client on
 *   its cookie (as @supabase/ssr's createServerClient does), calls getSession(), renders for up
 *   to 3 s and answers with Set-Cookie when the client wrote a session, which the browser stores
 *   over whatever it holds by then;
 * - in some cycles a tab calls refreshSession() in the first 5 s (an app that wants fresh
 *   claims), in half of them twice in a row.
 * Each answer to `grant_type=refresh_token` takes up to 250 ms to come back, and 10 % are lost
 * on the way (the server made them; the client sees a network error and retries as auth-js
 * does). Every random choice comes from the seed: the schedule from one stream drawn at the
 * start of each cycle, each answer's fate from a hash of its client and request number, so the
 * run does not depend on the order in which the server answers.
 *
 * Time moves only when nothing is in flight: the driver waits for every request and the promise
 * callbacks after it, then fires the next fake timer (a client's start, a render's end, an
 * answer's arrival, auth-js's back-off), until the cycle's clients are done.
 */
import FakeTimers from "@sinonjs/fake-timers";
import { GoTrueClient } from "@supabase/auth-js";

/** What the test sends to start a run. */
export interface RunRequest {
  url: string;
  /** One float64: the fake time in ms, read by the server's clock. */
  clock: SharedArrayBuffer;
  startMs: number;
  seed: number;
  cycles: number;
  email: string;
  password: string;
  dropRate: number;
  reuseIntervalSec: number;
}

/** An answer to a refresh other than a token set. */
export interface RefusedRefresh {
  cycle: number;
  client: string;
  status: number;
  error_code: string;
  /** How many tokens the presented one was behind the newest the clients had seen. */
  behind: number;
  /** Seconds since the presented token was first exchanged. */
  usedSecAgo: number;
}

/** What the run reports back. */
export interface RunReport {
  cycles: number;
  tokenRequests: number;
  dropped: number;
  /** Refresh answers that handed out a new token. */
  rotations: number;
  /** Refresh answers that handed an already-used token the live one. */
  reuses: number;
  /** ... of a token two or more exchanges behind. */
  reusesOlder: number;
  /** ... of a token that was first exchanged longer ago than the reuse interval. */
  reusesLate: number;
  /** SSR answers that wrote a token over a newer one in the browser. */
  staleCookies: number;
  signedOut: number;
  nullSessions: number;
  refused: RefusedRefresh[];
  fakeDays: number;
  /** The session the browser holds at the end. */
  sessionId?: string;
  error?: string;
}

const KEY = "sb-refresh-races-auth-token";
const TABS = 8;
/** The share of cycles with a page load (4 requests at once to the app servers). */
const PAGE_LOADS = 0.15;
/** ... with a navigation (one request to one app server). */
const NAVIGATIONS = 0.15;
/** ... in which a tab calls refreshSession() in the first 5 s (twice in a row in half of them). */
const FORCED = 0.1;

/** mulberry32: a small seeded generator of floats in [0, 1). */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of `text`: the seed of one loss decision. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A Storage on a Map, as auth-js's `storage` option takes it. */
function mapStorage(map: Map<string, string>) {
  return {
    getItem: (k: string) => map.get(k) ?? null,
    setItem: (k: string, v: string) => void map.set(k, v),
    removeItem: (k: string) => void map.delete(k),
  };
}

async function run(req: RunRequest): Promise<RunReport> {
  const realFetch = globalThis.fetch;
  const serverClock = new Float64Array(req.clock);
  const clock = FakeTimers.withGlobal(globalThis).install({
    now: req.startMs,
    toFake: ["Date", "setTimeout", "clearTimeout", "setInterval", "clearInterval"],
  });
  const report: RunReport = {
    cycles: 0,
    tokenRequests: 0,
    dropped: 0,
    rotations: 0,
    reuses: 0,
    reusesOlder: 0,
    reusesLate: 0,
    staleCookies: 0,
    signedOut: 0,
    nullSessions: 0,
    refused: [],
    fakeDays: 0,
  };
  const inflight = new Set<Promise<unknown>>();
  // The chain of refresh tokens as the answers showed it, and when each was first exchanged.
  const order = new Map<string, number>();
  const usedAt = new Map<string, number>();
  let cycle = 0;

  /** fetch as a client's network gives it: answers to refreshes are lost at the drop rate. */
  function network(client: string): typeof fetch {
    let n = 0;
    return async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      const attempt = `${req.seed}:${client}:${n++}`;
      serverClock[0] = Date.now();
      const sent = realFetch(input, init).then(async (r) => ({ r, text: await r.text() }));
      inflight.add(sent);
      let answer: { r: Response; text: string };
      try {
        answer = await sent;
      } finally {
        inflight.delete(sent);
      }
      const { r, text } = answer;
      if (url.includes("grant_type=refresh_token")) {
        report.tokenRequests++;
        const presented = String(JSON.parse(String(init?.body ?? "{}")).refresh_token ?? "");
        note(client, presented, r.status, text);
        // The answer is on its way for up to 250 ms, or lost.
        const fate = generator(hash(attempt));
        const lost = fate() < req.dropRate;
        await new Promise((done) => setTimeout(done, fate() * 250));
        if (lost) {
          report.dropped++;
          throw new TypeError("network error: the answer was lost on the way back");
        }
      }
      return new Response(text, { status: r.status, statusText: r.statusText, headers: r.headers });
    };
  }

  /** Counts what a refresh answer was: a rotation, a reuse (how far behind, how late) or a refusal. */
  function note(client: string, presented: string, status: number, text: string) {
    const body = JSON.parse(text) as { refresh_token?: string; error_code?: string };
    const newest = order.size;
    const at = order.get(presented) ?? -1;
    const ageSec = (Date.now() - (usedAt.get(presented) ?? Date.now())) / 1000;
    if (status !== 200 || !body.refresh_token) {
      report.refused.push({
        cycle,
        client,
        status,
        error_code: String(body.error_code),
        behind: newest - 1 - at,
        usedSecAgo: ageSec,
      });
      return;
    }
    if (!order.has(body.refresh_token)) {
      order.set(body.refresh_token, newest);
      usedAt.set(presented, Date.now());
      report.rotations++;
      return;
    }
    report.reuses++;
    if (order.get(body.refresh_token)! - at >= 2) report.reusesOlder++;
    if (ageSec > req.reuseIntervalSec) report.reusesLate++;
  }

  const browser = new Map<string, string>();
  const watch = (c: GoTrueClient) =>
    c.onAuthStateChange((event) => {
      if (event === "SIGNED_OUT") report.signedOut++;
    });
  const client = (storage: Map<string, string>, name: string) => {
    const c = new GoTrueClient({
      url: req.url,
      storageKey: KEY,
      storage: mapStorage(storage),
      autoRefreshToken: false,
      persistSession: true,
      detectSessionInUrl: false,
      fetch: network(name),
    });
    watch(c);
    return c;
  };
  const tabs = Array.from({ length: TABS }, (_, i) => client(browser, `tab${i}`));

  /** Resolves once no request is in flight and the callbacks after the last one have run. */
  async function idle() {
    for (;;) {
      while (inflight.size) await Promise.allSettled([...inflight]);
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      if (!inflight.size) return;
    }
  }

  /** Runs the fake clock from timer to timer until `done` settles. */
  async function drive(done: Promise<unknown>) {
    let finished = false;
    done.finally(() => finished = true);
    for (let quiet = 0;;) {
      await idle();
      if (finished) return await done;
      if (clock.countTimers() > 0) {
        clock.next();
        quiet = 0;
      } else if (++quiet > 100) {
        throw new Error(`cycle ${cycle}: stuck with nothing to run`);
      }
    }
  }

  /** `fn` run after `ms` of fake time. */
  const after = (ms: number, fn: () => Promise<void>) =>
    new Promise<void>((resolve, reject) => setTimeout(() => fn().then(resolve, reject), ms));

  async function tabTick(tab: GoTrueClient) {
    const { data } = await tab.getSession();
    if (!data.session) report.nullSessions++;
  }

  async function ssrRequest(server: number, j: number, cookie: string | null, renderMs: number) {
    const jar = new Map<string, string>();
    if (cookie !== null) jar.set(KEY, cookie);
    const c = client(jar, `ssr${server}-${cycle}-${j}`);
    const { data } = await c.getSession();
    if (!data.session) report.nullSessions++;
    await new Promise((r) => setTimeout(r, renderMs));
    const written = jar.get(KEY) ?? null;
    if (written === cookie) return;
    // Set-Cookie: the browser keeps what the answer carries, over whatever it holds now.
    const held = browser.get(KEY);
    const token = (v: string | undefined | null) => v ? JSON.parse(v).refresh_token as string : "";
    if ((order.get(token(written)) ?? -1) < (order.get(token(held)) ?? -1)) report.staleCookies++;
    if (written === null) browser.delete(KEY);
    else browser.set(KEY, written);
  }

  try {
    const signIn = await tabs[0].signInWithPassword({ email: req.email, password: req.password });
    if (signIn.error) throw signIn.error;
    order.set(signIn.data.session!.refresh_token, 0);
    const schedule = generator(req.seed);
    for (cycle = 0; cycle < req.cycles; cycle++) {
      const held = browser.get(KEY);
      if (!held) throw new Error(`cycle ${cycle}: the browser holds no session`);
      // The cycle starts between 90 s before the access token expires (auth-js's margin) and
      // 90 s after it (a tab that slept through it).
      const expiresMs = (JSON.parse(held) as { expires_at: number }).expires_at * 1000;
      clock.setSystemTime(Math.max(Date.now(), expiresMs - 90_000 + schedule() * 180_000));
      const work: Promise<void>[] = [];
      // A page load: 4 requests at once, 2 to each app server, with the cookie of this moment.
      if (schedule() < PAGE_LOADS) {
        const cookie = browser.get(KEY) ?? null;
        for (let j = 0; j < 4; j++) work.push(ssrRequest(j % 2, j, cookie, schedule() * 3000));
      }
      // A navigation: one request to one app server, at some moment of the cycle.
      if (schedule() < NAVIGATIONS) {
        const server = schedule() < 0.5 ? 0 : 1;
        const renderMs = schedule() * 3000;
        work.push(after(schedule() * 30_000, async () => {
          await ssrRequest(server, 4, browser.get(KEY) ?? null, renderMs);
        }));
      }
      for (const tab of tabs) work.push(after(schedule() * 30_000, () => tabTick(tab)));
      // An app that wants fresh claims refreshes on its own, now and then twice in a row.
      if (schedule() < FORCED) {
        const tab = tabs[Math.floor(schedule() * TABS)];
        const at = schedule() * 5000;
        const twice = schedule() < 0.5;
        const gap = schedule() * 2000;
        const force = async () => void await tab.refreshSession();
        work.push(after(at, force));
        if (twice) work.push(after(at + gap, force));
      }
      await drive(Promise.all(work));
      report.cycles++;
    }
    const held = JSON.parse(browser.get(KEY) ?? "{}") as { access_token?: string };
    const claims = held.access_token?.split(".")[1] ?? "";
    report.sessionId = JSON.parse(atob(claims.replaceAll("-", "+").replaceAll("_", "/")))
      .session_id;
  } catch (e) {
    report.error = e instanceof Error ? e.stack ?? e.message : String(e);
  } finally {
    report.fakeDays = (Date.now() - req.startMs) / 86_400_000;
    clock.uninstall();
  }
  return report;
}

self.onmessage = async (ev: MessageEvent<RunRequest>) => {
  self.postMessage(await run(ev.data));
};

/**
 * Live figures for the console: sign-ins, sign-ups, token refreshes and
 * failed sign-in attempts per minute over the last hour. Counted from the
 * domain events the metrics already observe (auth/events.ts) and, for
 * failures, from the answers of the endpoints that hand out sessions.
 */
import type { Clock } from "../auth/clock.ts";
import type { Events } from "../auth/events.ts";

export const SERIES = ["signins", "signups", "refreshes", "failures"] as const;
export type SeriesName = typeof SERIES[number];

/** One minute of counts; `t` is the minute's start (ms since the epoch). */
export type Minute = { t: number } & Record<SeriesName, number>;

const MINUTE_MS = 60_000;
const KEEP_MINUTES = 60;

/** Paths whose 4xx answers count as failed sign-in attempts. */
const SIGN_IN_PATHS = new Set(["/token", "/verify", "/factors/verify"]);

export class ConsoleFigures {
  #minutes = new Map<number, Minute>();

  constructor(events: Events, readonly clock: Clock) {
    events.on("signin", () => this.add("signins"));
    events.on("signup", () => this.add("signups"));
    events.on("token_refresh", () => this.add("refreshes"));
  }

  add(name: SeriesName): void {
    const t = Math.floor(this.clock.now().getTime() / MINUTE_MS) * MINUTE_MS;
    let m = this.#minutes.get(t);
    if (!m) {
      m = { t, signins: 0, signups: 0, refreshes: 0, failures: 0 };
      this.#minutes.set(t, m);
      for (const k of this.#minutes.keys()) {
        if (k <= t - KEEP_MINUTES * MINUTE_MS) this.#minutes.delete(k);
      }
    }
    m[name]++;
  }

  /** Counts a request's answer: a 4xx from an endpoint that signs in is a failure. */
  observe(method: string, path: string, status: number): void {
    if (method !== "POST" || status < 400 || status >= 500) return;
    const p = /^\/factors\/[^/]+\/verify$/.test(path) ? "/factors/verify" : path;
    if (SIGN_IN_PATHS.has(p)) this.add("failures");
  }

  /** The last hour, oldest minute first, with empty minutes filled in. */
  lastHour(): Minute[] {
    const now = Math.floor(this.clock.now().getTime() / MINUTE_MS) * MINUTE_MS;
    const out: Minute[] = [];
    for (let i = KEEP_MINUTES - 1; i >= 0; i--) {
      const t = now - i * MINUTE_MS;
      out.push(this.#minutes.get(t) ?? { t, signins: 0, signups: 0, refreshes: 0, failures: 0 });
    }
    return out;
  }
}

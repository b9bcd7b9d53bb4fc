/**
 * Per-client request limits (fixed windows), keyed by the client IP or, when
 * RATE_LIMIT_HEADER is set and the request carries it, by that header's value.
 *
 * Where each limit is counted (the decision, and why):
 * - `/verify`, `/otp` + `/magiclink`, `/signup` and anonymous sign-ups are
 *   counted in PostgreSQL (`rate_counters`), so N server processes still allow
 *   the limit once, not N times: these endpoints create users, send mail and
 *   SMS, or check guessable codes, which is what an attacker spreads over
 *   replicas. One `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` per request
 *   counts atomically, whatever the number of processes.
 * - `/token` (RATE_LIMIT_TOKEN_REFRESH) is counted in each process: it is the
 *   hot path (every client refreshes), its limit is generous, and a refresh
 *   token cannot be guessed, so a database write per refresh would buy little.
 *   A process keeps the counters of at most LOCAL_KEYS_MAX clients: past
 *   windows' go first, then (more clients than that in one window, e.g. a
 *   RATE_LIMIT_HEADER value made up per request) the oldest window's.
 */
import type { Config, Rate } from "../config/mod.ts";
import type { Clock } from "../auth/clock.ts";
import type { Db } from "../db/db.ts";
import { AuthError } from "../auth/errors.ts";
import { RateLimitStore } from "../store/rate_limits.ts";

/** The request limits, by name. */
export type LimitName = "token" | "verify" | "otp" | "signup" | "anonymous";

/** Where a limit is counted. */
export const SHARED_LIMITS: ReadonlySet<LimitName> = new Set([
  "verify",
  "otp",
  "signup",
  "anonymous",
]);

/** The setting of each limit. */
export function rateOf(config: Config, name: LimitName): Rate {
  const r = config.rateLimit;
  switch (name) {
    case "token":
      return r.tokenRefresh;
    case "verify":
      return r.verify;
    case "otp":
      return r.otp;
    case "signup":
      return r.signup;
    case "anonymous":
      return r.anonymousUsers;
  }
}

/** Outcome of counting one request. */
export interface Hit {
  allowed: boolean;
  /** Seconds until the current window ends. */
  retryAfterSec: number;
}

const PRUNE_EVERY_MS = 10 * 60 * 1000;

/** Clients whose counters of the per-process limits a process keeps (about 300 bytes each). */
export const LOCAL_KEYS_MAX = 100_000;

/** Counts requests against the limits; one per server. */
export class RateLimiter {
  readonly #local = new Map<string, { windowStart: number; count: number }>();
  #lastPrune = 0;

  readonly #store: RateLimitStore;

  constructor(readonly config: Config, readonly db: Db, readonly clock: Clock) {
    this.#store = new RateLimitStore(db);
  }

  /** Counts one request of `key` against limit `name`. */
  async hit(name: LimitName, key: string): Promise<Hit> {
    const rate = rateOf(this.config, name);
    const now = this.clock.now().getTime();
    const windowMs = Math.max(1, Math.round(rate.windowSec * 1000));
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const retryAfterSec = Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000));
    const count = SHARED_LIMITS.has(name)
      ? await this.#countShared(`${name}:${key}`, windowStart, now)
      : this.#countLocal(`${name}:${key}`, windowStart);
    return { allowed: count <= rate.count, retryAfterSec };
  }

  #countLocal(key: string, windowStart: number): number {
    const cur = this.#local.get(key);
    if (cur && cur.windowStart === windowStart) return ++cur.count;
    // A counter that starts a window goes to the back, so the map stays in window order: the
    // counters of past windows are at the front, and so are the oldest when it is full.
    if (cur) this.#local.delete(key);
    for (const [k, v] of this.#local) {
      if (v.windowStart >= windowStart && this.#local.size < LOCAL_KEYS_MAX) break;
      this.#local.delete(k);
    }
    this.#local.set(key, { windowStart, count: 1 });
    return 1;
  }

  /** How many clients' per-process counters are kept (tests read it). */
  get localKeys(): number {
    return this.#local.size;
  }

  async #countShared(key: string, windowStart: number, now: number): Promise<number> {
    const count = await this.#store.increment(key, new Date(windowStart));
    if (now - this.#lastPrune > PRUNE_EVERY_MS) {
      this.#lastPrune = now;
      const longest = Math.max(
        ...[...SHARED_LIMITS].map((n) => rateOf(this.config, n).windowSec * 1000),
      );
      await this.#store.pruneBefore(new Date(now - 2 * longest));
    }
    return count;
  }
}

/** The 429 GoTrue answers, with Retry-After. */
export function overRequestRateLimit(retryAfterSec: number): AuthError {
  return new AuthError(
    "over_request_rate_limit",
    `Request rate limit reached, try again in ${retryAfterSec} seconds`,
    { retryAfterSec },
  );
}

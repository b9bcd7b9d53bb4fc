/**
 * Keeps the tables bounded: every CLEANUP_INTERVAL each server process
 * deletes what can no longer be used, in small batches (store/cleanup.ts,
 * where the SQL and its concurrency live). What is dead, and since when:
 *
 * - revoked refresh tokens, once past the reuse interval and the grace
 *   window (CLEANUP_GRACE, a day by default: until then a replayed old token
 *   is still recognised as reuse and revokes its family; after it, it is
 *   only unknown, as in GoTrue);
 * - sessions past `not_after`, past SESSIONS_TIMEBOX or inactive past
 *   SESSIONS_INACTIVITY_TIMEOUT, once the grace window has passed too (until
 *   then their refresh tokens answer session_expired rather than not found);
 *   their refresh tokens go with them;
 * - one-time tokens and used OAuth states past `expires_at` (nothing accepts
 *   them any more);
 * - PKCE flow states older than an unused flow may live (auth/pkce.ts);
 * - MFA challenges older than twice their expiry and the grace window;
 * - send-log rows and shared rate counters older than any limit looks back;
 * - audit entries older than AUDIT_LOG_RETENTION, when it is set;
 * - the console's activity counts older than a day (the chart shows an hour).
 *
 * The cutoffs come from the injected clock, so tests age rows by moving it.
 */
import type { Config } from "../config/mod.ts";
import type { Db } from "../db/db.ts";
import type { Logger } from "../observe/log.ts";
import { CLEANUP_KINDS, type CleanupKind, CleanupStore } from "../store/cleanup.ts";
import type { Clock } from "./clock.ts";
import { UNUSED_FLOW_TTL_SEC } from "../store/flow_states.ts";

export { CLEANUP_KINDS, type CleanupKind } from "../store/cleanup.ts";

/** How long the console's activity counts are kept (console/figures.ts shows the last hour). */
export const ACTIVITY_KEPT_SEC = 86_400;

/** Batches of one kind one pass deletes at most, so one pass ends even while rows keep dying. */
export const MAX_BATCHES_PER_PASS = 100;

/** Rows deleted by one pass, by kind. */
export type CleanupCounts = Record<CleanupKind, number>;

/**
 * For each kind of row, the time before which such a row is dead at `now`;
 * a kind that `config` never lets die (an unset limit) is absent.
 */
export function cleanupCutoffs(config: Config, now: Date): Partial<Record<CleanupKind, Date>> {
  const ago = (sec: number) => new Date(now.getTime() - sec * 1000);
  const grace = config.cleanup.graceSec;
  const rates = Object.values(config.rateLimit)
    .filter((r): r is { count: number; windowSec: number } => typeof r === "object")
    .map((r) => r.windowSec);
  const cutoffs: Partial<Record<CleanupKind, Date>> = {
    refresh_tokens: ago(Math.max(config.security.refreshTokenReuseInterval, grace)),
    sessions_expired: ago(grace),
    one_time_tokens: now,
    flow_states: ago(Math.max(UNUSED_FLOW_TTL_SEC, config.mailer.otpExp)),
    oauth_states: now,
    mfa_challenges: ago(Math.max(2 * config.mfa.challengeExpiry, grace)),
    // The longest any send limit looks back (auth/send_limits.ts).
    send_log: ago(Math.max(
      config.rateLimit.emailSent.windowSec,
      config.rateLimit.smsSent.windowSec,
      config.smtp.maxFrequency,
      config.smtp.linkFrequency,
      config.sms.maxFrequency,
    )),
    // Fixed windows: a counter is read only within its window (security/rate_limit.ts).
    rate_counters: ago(2 * Math.max(...rates)),
    activity_minutes: ago(ACTIVITY_KEPT_SEC),
  };
  if (config.sessions.timeboxSec > 0) {
    cutoffs.sessions_timebox = ago(config.sessions.timeboxSec + grace);
  }
  if (config.sessions.inactivityTimeoutSec > 0) {
    cutoffs.sessions_inactive = ago(config.sessions.inactivityTimeoutSec + grace);
  }
  if (config.cleanup.auditRetentionSec > 0) {
    cutoffs.audit_log = ago(config.cleanup.auditRetentionSec);
  }
  return cutoffs;
}

/** The cleanup of one server process: `start` at boot, `stop` at close. */
export class Cleanup {
  readonly #store: CleanupStore;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pass: Promise<unknown> | null = null;
  #stopped = false;
  /** Told after every scheduled pass (tests wait on it; metrics may count). */
  onPass: ((counts: CleanupCounts | null, error?: unknown) => void) | null = null;

  constructor(
    db: Db,
    readonly config: Config,
    readonly clock: Clock,
    readonly log: Logger,
  ) {
    this.#store = new CleanupStore(db);
  }

  /**
   * Deletes what is dead now, kind by kind, a batch at a time, until a batch
   * comes back short (or MAX_BATCHES_PER_PASS); how many rows of each kind.
   */
  async runOnce(): Promise<CleanupCounts> {
    const cutoffs = cleanupCutoffs(this.config, this.clock.now());
    const limit = this.config.cleanup.batchSize;
    const counts = Object.fromEntries(CLEANUP_KINDS.map((k) => [k, 0])) as CleanupCounts;
    for (const kind of CLEANUP_KINDS) {
      const cutoff = cutoffs[kind];
      if (!cutoff) continue;
      for (let i = 0; i < MAX_BATCHES_PER_PASS && !this.#stopped; i++) {
        const n = await this.#store.delete(kind, cutoff, limit);
        counts[kind] += n;
        if (n < limit) break;
      }
    }
    return counts;
  }

  /**
   * Runs a pass every CLEANUP_INTERVAL (the first after a random part of
   * it, so processes started together do not run in step). Nothing when the
   * interval is 0.
   */
  start(): void {
    const every = this.config.cleanup.intervalSec * 1000;
    if (every <= 0 || this.#stopped || this.#timer !== undefined) return;
    this.#schedule(every * (0.5 + Math.random() / 2));
  }

  #schedule(ms: number): void {
    const timer = setTimeout(() => {
      this.#timer = undefined;
      this.#pass = this.runOnce().then(
        (counts) => {
          const total = Object.values(counts).reduce((a, b) => a + b, 0);
          if (total > 0) this.log.debug("cleanup deleted dead rows", { ...counts });
          this.onPass?.(counts);
        },
        (e) => {
          this.log.warn("cleanup failed", { error: e instanceof Error ? e.message : String(e) });
          this.onPass?.(null, e);
        },
      ).finally(() => {
        this.#pass = null;
        if (!this.#stopped) this.#schedule(this.config.cleanup.intervalSec * 1000);
      });
    }, ms);
    this.#timer = timer;
    Deno.unrefTimer(timer);
  }

  /** Stops the schedule and waits for a pass under way (it ends after its current batch). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#pass;
  }
}

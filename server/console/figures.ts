/**
 * The console's activity figures: sign-ins, sign-ups, token refreshes and
 * failed sign-in attempts per minute over the last hour, read from the
 * database (store/activity.ts), so the chart survives restarts and sums
 * every server process.
 *
 * Each process counts the domain events (auth/events.ts) and the failing
 * answers of the endpoints that sign in, and adds its counts to the table
 * a few seconds later in one statement: a busy server writes one row per
 * minute and series every FLUSH_MS, not one per request. A process that
 * dies loses at most those few seconds.
 */
import type { Clock } from "../auth/clock.ts";
import type { Events } from "../auth/events.ts";
import type { Logger } from "../observe/log.ts";
import type { ActivityStore } from "../store/activity.ts";

export const SERIES = ["signins", "signups", "refreshes", "failures"] as const;
export type SeriesName = typeof SERIES[number];

/** One minute of counts; `t` is the minute's start (ms since the epoch). */
export type Minute = { t: number } & Record<SeriesName, number>;

const MINUTE_MS = 60_000;
const SHOWN_MINUTES = 60;
/** How long a process keeps its counts before adding them to the table. */
export const FLUSH_MS = 5_000;

/** Paths whose 4xx answers count as failed sign-in attempts. */
const SIGN_IN_PATHS = new Set(["/token", "/verify", "/factors/verify"]);

export class ConsoleFigures {
  /** Counts not yet in the table: "<minute ms> <series>" → count. */
  #pending = new Map<string, number>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #flushing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(
    events: Events,
    readonly clock: Clock,
    readonly store: ActivityStore,
    readonly log: Logger,
  ) {
    events.on("signin", () => this.add("signins"));
    events.on("signup", () => this.add("signups"));
    events.on("token_refresh", () => this.add("refreshes"));
  }

  /** Counts one event of `name` in the current minute. */
  add(name: SeriesName): void {
    const t = Math.floor(this.clock.now().getTime() / MINUTE_MS) * MINUTE_MS;
    const key = `${t} ${name}`;
    this.#pending.set(key, (this.#pending.get(key) ?? 0) + 1);
    this.#schedule();
  }

  /** A flush in FLUSH_MS, unless one is due already (or the server is closing). */
  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, FLUSH_MS);
    Deno.unrefTimer(this.#timer);
  }

  /** Counts a request's answer: a 4xx from an endpoint that signs in is a failure. */
  observe(method: string, path: string, status: number): void {
    if (method !== "POST" || status < 400 || status >= 500) return;
    const p = /^\/factors\/[^/]+\/verify$/.test(path) ? "/factors/verify" : path;
    if (SIGN_IN_PATHS.has(p)) this.add("failures");
  }

  /** Adds the pending counts to the table; counts it could not write wait for the next flush. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (!this.#pending.size) return;
      const taken = this.#pending;
      this.#pending = new Map();
      const rows = [...taken].map(([key, count]) => {
        const [t, series] = key.split(" ");
        return { minute: new Date(Number(t)), series, count };
      });
      try {
        await this.store.add(rows);
      } catch (e) {
        for (const [key, n] of taken) this.#pending.set(key, (this.#pending.get(key) ?? 0) + n);
        this.log.warn("console activity counts not saved, retrying", {
          error: e instanceof Error ? e.message : String(e),
        });
        this.#schedule();
      }
    });
    return this.#flushing;
  }

  /** The last hour, oldest minute first, with empty minutes filled in; every process's counts. */
  async lastHour(): Promise<Minute[]> {
    await this.flush(); // this process's own counts up to now
    const now = Math.floor(this.clock.now().getTime() / MINUTE_MS) * MINUTE_MS;
    const first = now - (SHOWN_MINUTES - 1) * MINUTE_MS;
    const byMinute = new Map<number, Minute>();
    const out: Minute[] = [];
    for (let t = first; t <= now; t += MINUTE_MS) {
      const m = { t, signins: 0, signups: 0, refreshes: 0, failures: 0 };
      byMinute.set(t, m);
      out.push(m);
    }
    for (const row of await this.store.since(new Date(first))) {
      const m = byMinute.get(new Date(row.minute).getTime());
      if (m && (SERIES as readonly string[]).includes(row.series)) {
        m[row.series as SeriesName] += row.count;
      }
    }
    return out;
  }

  /** Stops the timer and writes what is pending (at shutdown, before the database closes). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }
}

/**
 * A pool of PostgreSQL connections that pipelines.
 *
 * Single statements (autocommit) issued in the same tick go to the same connection while it
 * takes them, so they leave in one write (one syscall and one wake-up of the backend for the
 * batch instead of one per query). Otherwise a statement goes to the first connection, in
 * opening order, with fewer than `spillAt` queries in flight; only when every connection has
 * that many does the pool open another (up to `shared`), and beyond that it pipelines onto the
 * least busy one. A few connections kept busy answer more queries, with less CPU on both sides,
 * than one connection per query in flight: each statement sent to an idle connection costs a
 * write and a backend wake-up of its own. Transactions and `withConnection` reserve a
 * connection for themselves; the pool opens more, up to `max`, for them.
 *
 * A connection whose oldest query has waited longer than `stallMs` (a lock wait, a slow
 * statement) gets no new queries while another can take them, and when none can, the pool opens
 * another connection (up to `max`): one blocked statement never holds up the queries queued
 * behind it for long.
 *
 * A query may carry a scope (the HTTP request it serves, inflight.ts QueryScope): the pool gives
 * up the queries and waits whose deadline has passed, or whose caller has gone after waiting
 * `stallMs` (asked again every `watchMs` from then on), with a PgAbortError. One timer, set for
 * the earliest such moment, does this; when it finds nothing in flight it is not set again until
 * the next query, so an idle pool wakes for none of it. It is not cleared when a query finishes:
 * setting and clearing a timer for every query costs the event loop more than the wake-ups it
 * saves. When PostgreSQL is running a query given up, a CancelRequest stops it, and that
 * connection retires (no new queries, closed once idle) so that a late cancel cannot hit a later
 * statement; a statement of another caller cancelled there anyway is run again once (each has
 * its own implicit transaction, rolled back by the cancel).
 *
 * When PostgreSQL cannot be reached, queries fail at once with the connection error (the API
 * answers 503) instead of queueing; a new connect is tried after a short backoff (50 ms doubling
 * to 1 s), so the pool heals within about a second of the database coming back.
 */
import { Connection, type QueryScope, type Row } from "./connection.ts";
import { PgAbortError, PgConnectionError, PgError } from "./errors.ts";
import type { ConnectOptions } from "./options.ts";
import { POOL_DEFAULTS, type PoolOptions, type PoolStats } from "./pool_options.ts";

export { POOL_DEFAULTS, type PoolOptions, type PoolStats };

interface Waiter {
  reserve: boolean;
  scope: QueryScope | undefined;
  since: number;
  take(c: Connection): void;
  fail(e: unknown): void;
}

/** A pool of connections to one database. */
export class Pool {
  readonly #connect: ConnectOptions;
  readonly #o: PoolOptions;
  readonly #conns: Connection[] = [];
  readonly #opening = new Set<Promise<unknown>>();
  #waiting: Waiter[] = [];
  #lastError: PgConnectionError | null = null;
  #retryAt = 0;
  #backoffMs = 0;
  #ending = false;
  #sweeper: ReturnType<typeof setInterval> | undefined;
  /** The connection the last single statement went to (joined while its batch is unsent). */
  #last: Connection | null = null;
  /** The timer that gives up what passed its deadline or lost its caller (#watchBy). */
  #watch: ReturnType<typeof setTimeout> | undefined;
  /** When #watch fires (performance.now); Infinity when it is not set. */
  #watchAt = Infinity;
  /** Retiring connections being closed (awaited by end). */
  readonly #closing = new Set<Promise<void>>();
  /** Told how long each wait for a connection took (ms): reservations, and queries that waited. */
  onWait: ((ms: number) => void) | null = null;

  constructor(connect: ConnectOptions, options: Partial<PoolOptions> & { max: number }) {
    this.#connect = connect;
    const o = { ...POOL_DEFAULTS, ...options };
    this.#o = { ...o, shared: Math.max(1, Math.min(o.shared, o.max)) };
  }

  /** Open connections (for tests and metrics). */
  get size(): number {
    return this.#conns.length;
  }

  /**
   * Whether the timer that gives up queries past their deadline (or whose caller went away) is
   * set: from a query (or a wait) with a scope until the timer finds nothing left to watch.
   */
  get watching(): boolean {
    return this.#watch !== undefined;
  }

  /** Connections by state and callers waiting. */
  stats(): PoolStats {
    let idle = 0;
    let used = 0;
    for (const c of this.#conns) {
      if (c.closed) continue;
      if (c.reserved || c.inflight > 0 || c.retired) used++;
      else idle++;
    }
    return { idle, used, max: this.#o.max, pending: this.#waiting.length };
  }

  /** Runs one statement on a shared connection. */
  query(text: string, params: readonly unknown[] = [], scope?: QueryScope): Promise<Row[]> {
    const c = this.#pick();
    if (c !== null) return this.#run(c, text, params, scope, false);
    return this.#wait(false, scope).then((conn) => this.#run(conn, text, params, scope, false));
  }

  /** Runs parameterless statements (simple protocol) on a shared connection. */
  exec(text: string, scope?: QueryScope): Promise<Row[]> {
    const c = this.#pick();
    if (c !== null) return c.simple(text, scope);
    return this.#wait(false, scope).then((conn) => conn.simple(text, scope));
  }

  /** A connection for this caller alone, until `release`. */
  reserve(scope?: QueryScope): Promise<Connection> {
    const c = this.#ending ? null : this.#idle();
    if (c !== null) {
      c.reserved = true;
      this.onWait?.(0);
      return Promise.resolve(c);
    }
    return this.#wait(true, scope);
  }

  /** Gives a reserved connection back (closed instead when it was left inside a transaction). */
  release(c: Connection): void {
    c.reserved = false;
    c.draining = false;
    if (c.closed) return;
    if (c.txStatus !== "I" || this.#ending || c.retired) {
      this.#close(c);
      return;
    }
    this.#drain();
  }

  /** Waits up to `timeoutMs` for queries in flight, then closes every connection. */
  async end(timeoutMs = 5000): Promise<void> {
    this.#ending = true;
    const err = new PgConnectionError("CONNECTION_ENDED", "the database pool is closed");
    for (const w of this.#waiting.splice(0)) w.fail(err);
    const deadline = performance.now() + timeoutMs;
    while (
      performance.now() < deadline &&
      this.#conns.some((c) => !c.closed && (c.inflight > 0 || c.reserved))
    ) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.allSettled([...this.#opening]);
    await Promise.all([...this.#conns].map((c) => c.close()));
    await Promise.all([...this.#closing]);
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    this.#unwatch();
  }

  #run(
    c: Connection,
    text: string,
    params: readonly unknown[],
    scope: QueryScope | undefined,
    again: boolean,
  ): Promise<Row[]> {
    return c.query(text, params, scope).catch((e) => {
      // A table changed under a prepared statement (a migration by another process):
      // forget the statement and run the query once more, prepared afresh.
      if (e instanceof PgError && e.code === "0A000" && /cached plan/.test(e.message)) {
        c.forget(text);
        return this.query(text, params, scope);
      }
      // Cancelled on a connection where another caller's statement was being cancelled: a late
      // cancel may have hit this one instead. Its implicit transaction was rolled back; once more.
      if (e instanceof PgError && e.code === "57014" && c.cancelSent && !again) {
        const next = this.#pick();
        if (next !== null) return this.#run(next, text, params, scope, true);
        return this.#wait(false, scope).then((conn) => this.#run(conn, text, params, scope, true));
      }
      throw e;
    });
  }

  /** Closes a connection, to be awaited by end(). */
  #close(c: Connection): void {
    const p = c.close();
    this.#closing.add(p);
    void p.finally(() => this.#closing.delete(p));
  }

  /**
   * Gives up the queries and waits whose deadline passed or whose caller has gone, then sets the
   * timer for the next moment one of those still in flight or waiting must be looked at.
   */
  #expire(): void {
    const now = performance.now();
    const { stallMs, watchMs } = this.#o;
    let due = Infinity;
    for (const c of this.#conns) {
      if (c.inflight > 0 && !c.closed) {
        c.expire(now, stallMs);
        due = Math.min(due, c.nextWatch(now, stallMs, watchMs));
      }
    }
    if (this.#waiting.length > 0) {
      const rest: Waiter[] = [];
      for (const w of this.#waiting) {
        const s = w.scope;
        if (s !== undefined && now >= s.deadline) w.fail(new PgAbortError("POOL_TIMEOUT"));
        else if (s !== undefined && now - w.since >= stallMs && s.gone()) {
          w.fail(new PgAbortError("CLIENT_GONE"));
        } else {
          rest.push(w);
          if (s !== undefined) due = Math.min(due, this.#dueOf(w.since, s, now));
        }
      }
      this.#waiting = rest;
    }
    if (due < Infinity) this.#watchBy(due);
  }

  /**
   * When a query sent (or a wait begun) at `since` for `scope` must be looked at next: its
   * deadline, or `stallMs` after `since`, or, once older than that, `watchMs` from `now`.
   */
  #dueOf(since: number, scope: QueryScope, now: number): number {
    const ask = since + this.#o.stallMs;
    return Math.min(scope.deadline, ask > now ? ask : now + this.#o.watchMs);
  }

  /** Makes sure the watch timer fires by `due` (performance.now). */
  #watchBy(due: number): void {
    if (this.#ending || due >= this.#watchAt) return;
    if (this.#watch !== undefined) clearTimeout(this.#watch);
    this.#watchAt = due;
    this.#watch = setTimeout(() => {
      this.#watch = undefined;
      this.#watchAt = Infinity;
      this.#expire();
    }, Math.max(0, due - performance.now()));
    Deno.unrefTimer(this.#watch as unknown as number);
  }

  /** Clears the watch timer. */
  #unwatch(): void {
    if (this.#watch !== undefined) clearTimeout(this.#watch);
    this.#watch = undefined;
    this.#watchAt = Infinity;
  }

  /**
   * The connection a single statement goes to: the one whose batch is still unsent, else the
   * first connection (in opening order) with fewer than `spillAt` queries in flight, else the
   * least busy one. Filling connections in order keeps the load on as few backends as keep up
   * with it (each query written to an idle connection costs a write and a backend wake-up of
   * its own); null when none can take it.
   */
  #pick(): Connection | null {
    if (this.#ending) return null;
    const now = performance.now();
    const last = this.#last;
    if (
      last !== null && last.batching && !last.reserved && !last.draining && !last.retired &&
      !last.closed &&
      last.inflight < this.#o.batchMax && now - last.oldestSentAt! <= this.#o.stallMs
    ) {
      return last;
    }
    let best: Connection | null = null;
    let bestLoad = Infinity;
    for (const c of this.#conns) {
      if (c.reserved || c.draining || c.closed || c.retired) continue;
      const load = c.inflight;
      if (load === 0) return this.#last = c;
      if (load >= this.#o.maxPipeline || now - c.oldestSentAt! > this.#o.stallMs) continue;
      if (load < this.#o.spillAt) return this.#last = c;
      if (load < bestLoad) {
        best = c;
        bestLoad = load;
      }
    }
    const total = this.#conns.length + this.#opening.size;
    if (total < this.#o.max && (total < this.#o.shared || best === null)) this.#open();
    return this.#last = best;
  }

  /** An idle connection for a reservation, or null. */
  #idle(): Connection | null {
    for (const c of this.#conns) {
      if (!c.reserved && !c.closed && !c.retired && c.inflight === 0) return c;
    }
    return null;
  }

  #wait(reserve: boolean, scope: QueryScope | undefined): Promise<Connection> {
    if (this.#ending) {
      return Promise.reject(
        new PgConnectionError("CONNECTION_ENDED", "the database pool is closed"),
      );
    }
    const usable = this.#conns.some((c) => !c.closed);
    if (!usable && this.#opening.size === 0) {
      // Nothing open and nothing opening: either the backoff holds (fail now, as PostgreSQL
      // just refused) or a connect starts and this caller waits for it.
      if (performance.now() < this.#retryAt && this.#lastError) {
        return Promise.reject(this.#lastError);
      }
      this.#open();
    } else if (reserve) {
      const total = this.#conns.length + this.#opening.size;
      if (total < this.#o.max) this.#open();
      else this.#drainOne();
    }
    const since = performance.now();
    if (scope !== undefined) this.#watchBy(this.#dueOf(since, scope, since));
    return new Promise<Connection>((resolve, reject) => {
      this.#waiting.push({
        reserve,
        scope,
        since,
        take: (c) => {
          if (reserve) c.reserved = true;
          this.onWait?.(performance.now() - since);
          resolve(c);
        },
        fail: reject,
      });
    });
  }

  /** Marks the least busy shared connection so that it takes no new queries and can be reserved. */
  #drainOne(): void {
    let best: Connection | null = null;
    for (const c of this.#conns) {
      if (c.reserved || c.draining || c.closed || c.retired) continue;
      if (best === null || c.inflight < best.inflight) best = c;
    }
    if (best) best.draining = true;
  }

  /** Serves waiters with what is free now. */
  #drain(): void {
    if (this.#waiting.length === 0) return;
    const rest: Waiter[] = [];
    let sharedBlocked = false;
    for (const w of this.#waiting) {
      let c: Connection | null = null;
      if (w.reserve) {
        c = this.#idle();
        if (c) c.draining = false;
      } else if (!sharedBlocked) {
        c = this.#pick();
        if (c === null) sharedBlocked = true;
      }
      if (c) w.take(c);
      else rest.push(w);
    }
    this.#waiting = rest;
  }

  #open(): void {
    if (this.#ending || performance.now() < this.#retryAt) return;
    const opening = Connection.open(this.#connect).then((c) => {
      this.#opening.delete(opening);
      this.#backoffMs = 0;
      this.#lastError = null;
      if (this.#ending) {
        void c.close();
        return;
      }
      c.onClose = () => {
        const i = this.#conns.indexOf(c);
        if (i >= 0) this.#conns.splice(i, 1);
        if (this.#waiting.length) this.#drain();
      };
      c.onIdle = () => {
        if (c.retired && c.inflight === 0 && !c.reserved && !c.closed) this.#close(c);
        if (this.#waiting.length) this.#drain();
        else if (c.draining && c.inflight === 0) c.draining = false;
      };
      c.onScoped = (sentAt, scope) => this.#watchBy(this.#dueOf(sentAt, scope, sentAt));
      this.#conns.push(c);
      this.#startSweeper();
      this.#drain();
    }, (e) => {
      this.#opening.delete(opening);
      const err = e instanceof PgConnectionError
        ? e
        : new PgConnectionError("CONNECTION_FAILED", String(e), { cause: e });
      this.#lastError = err;
      this.#backoffMs = Math.min(Math.max(50, this.#backoffMs * 2), 1000);
      this.#retryAt = performance.now() + this.#backoffMs * (0.5 + Math.random() / 2);
      if (!this.#conns.some((c) => !c.closed) && this.#opening.size === 0) {
        // nobody else can serve them: they get the error now, not a hang
        for (const w of this.#waiting.splice(0)) w.fail(err);
      }
    });
    this.#opening.add(opening);
  }

  #startSweeper(): void {
    if (this.#sweeper !== undefined) return;
    const sweeper = setInterval(() => {
      const now = performance.now();
      for (const c of [...this.#conns]) {
        if (!c.reserved && c.inflight === 0 && now - c.lastUsed > this.#o.idleTimeoutMs) {
          void c.close();
        }
      }
      if (this.#conns.length === 0) {
        clearInterval(sweeper);
        this.#sweeper = undefined;
      }
    }, Math.max(1000, this.#o.idleTimeoutMs / 4));
    Deno.unrefTimer(sweeper as unknown as number);
    this.#sweeper = sweeper;
  }
}

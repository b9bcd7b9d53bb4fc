/**
 * A pool of PostgreSQL connections that pipelines.
 *
 * Single statements (autocommit) issued in the same tick go to the same
 * connection while it takes them, so they leave in one write (one syscall and
 * one wake-up of the backend for the batch instead of one per query: this was
 * a fifth of the server's CPU on `GET /user`, bench/README.md). Otherwise a
 * statement goes to the first connection, in opening order, with fewer than
 * `spillAt` queries in flight; only when every connection has that many does
 * the pool open another (up to `shared`), and beyond that it pipelines onto the
 * least busy one. A few connections kept busy answer more queries, with less
 * CPU on both sides, than one connection per query in flight: each statement
 * sent to an idle connection costs a write and a backend wake-up of its own
 * (spreading over idle connections cost PostgreSQL about a third more CPU per
 * `GET /user`; bench/README.md, "Pipelining"). Transactions and
 * `withConnection` reserve a connection for themselves; the pool opens more,
 * up to `max`, for them.
 *
 * A connection whose oldest query has waited longer than `stallMs` (a lock
 * wait, a slow statement) gets no new queries while another can take them,
 * and when none can, the pool opens another connection (up to `max`): one
 * blocked statement never holds up the queries queued behind it for long.
 *
 * When PostgreSQL cannot be reached, queries fail at once with the
 * connection error (the API answers 503) instead of queueing; a new connect
 * is tried after a short backoff (50 ms doubling to 1 s), so the pool heals
 * within about a second of the database coming back.
 */
import { Connection, type Row } from "./connection.ts";
import { PgConnectionError, PgError } from "./errors.ts";
import type { ConnectOptions } from "./options.ts";

/** Pool settings. */
export interface PoolOptions {
  /** Connections at most. */
  max: number;
  /** Connections single statements spread over before they are pipelined. */
  shared: number;
  /** Queries in flight on one connection at most. */
  maxPipeline: number;
  /** A connection with fewer queries in flight than this takes the next statement. */
  spillAt: number;
  /** A connection with this many queries in flight takes no more of the current tick's batch. */
  batchMax: number;
  /** A connection whose oldest query is older than this takes no new ones while others can. */
  stallMs: number;
  /** Idle connections are closed after this long. */
  idleTimeoutMs: number;
}

/** Defaults: see PoolOptions. */
export const POOL_DEFAULTS: Omit<PoolOptions, "max"> = {
  shared: 4,
  maxPipeline: 128,
  spillAt: 16,
  batchMax: 32,
  stallMs: 100,
  idleTimeoutMs: 60_000,
};

interface Waiter {
  reserve: boolean;
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

  constructor(connect: ConnectOptions, options: Partial<PoolOptions> & { max: number }) {
    this.#connect = connect;
    const o = { ...POOL_DEFAULTS, ...options };
    this.#o = { ...o, shared: Math.max(1, Math.min(o.shared, o.max)) };
  }

  /** Open connections (for tests and metrics). */
  get size(): number {
    return this.#conns.length;
  }

  /** Runs one statement on a shared connection. */
  query(text: string, params: readonly unknown[] = []): Promise<Row[]> {
    const c = this.#pick();
    if (c !== null) return this.#run(c, text, params);
    return this.#wait(false).then((conn) => this.#run(conn, text, params));
  }

  /** Runs parameterless statements (simple protocol) on a shared connection. */
  exec(text: string): Promise<Row[]> {
    const c = this.#pick();
    if (c !== null) return c.simple(text);
    return this.#wait(false).then((conn) => conn.simple(text));
  }

  /** A connection for this caller alone, until `release`. */
  reserve(): Promise<Connection> {
    const c = this.#ending ? null : this.#idle();
    if (c !== null) {
      c.reserved = true;
      return Promise.resolve(c);
    }
    return this.#wait(true);
  }

  /** Gives a reserved connection back (closed instead when it was left inside a transaction). */
  release(c: Connection): void {
    c.reserved = false;
    c.draining = false;
    if (c.closed) return;
    if (c.txStatus !== "I" || this.#ending) {
      void c.close();
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
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  #run(c: Connection, text: string, params: readonly unknown[]): Promise<Row[]> {
    return c.query(text, params).catch((e) => {
      // A table changed under a prepared statement (a migration by another process):
      // forget the statement and run the query once more, prepared afresh.
      if (e instanceof PgError && e.code === "0A000" && /cached plan/.test(e.message)) {
        c.forget(text);
        return this.query(text, params);
      }
      throw e;
    });
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
      last !== null && last.batching && !last.reserved && !last.draining && !last.closed &&
      last.inflight < this.#o.batchMax && now - last.oldestSentAt! <= this.#o.stallMs
    ) {
      return last;
    }
    let best: Connection | null = null;
    let bestLoad = Infinity;
    for (const c of this.#conns) {
      if (c.reserved || c.draining || c.closed) continue;
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
      if (!c.reserved && !c.closed && c.inflight === 0) return c;
    }
    return null;
  }

  #wait(reserve: boolean): Promise<Connection> {
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
    return new Promise<Connection>((resolve, reject) => {
      this.#waiting.push({
        reserve,
        take: (c) => {
          if (reserve) c.reserved = true;
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
      if (c.reserved || c.draining || c.closed) continue;
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
        if (this.#waiting.length) this.#drain();
        else if (c.draining && c.inflight === 0) c.draining = false;
      };
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

/**
 * The queries a connection has sent and not yet seen answered, oldest first (PostgreSQL
 * answers in order), and the watch over those whose caller's scope ends: the deadline passed,
 * or the caller went away.
 */
import { PgAbortError } from "./errors.ts";
import type { Parser, Row } from "./inbox.ts";
import type { Statement } from "./statements.ts";

/**
 * Whom a query works for (an HTTP request): the query is given up when `deadline` passes or,
 * once it has waited a while, when `gone()` says nobody waits for the answer any more.
 */
export interface QueryScope {
  /** performance.now() after which the answer is of no use. */
  readonly deadline: number;
  /** Whether whoever waits has gone away (asked only of queries that wait long). */
  gone(): boolean;
}

/** A query sent and not answered yet. */
export interface Pending {
  statement: Statement | null;
  /** This query carried the statement's Parse. */
  parses: boolean;
  /** Columns of a simple query's current result. */
  names: string[] | null;
  parsers: Parser[];
  /** The result formats this execution asked for (null: all text). */
  formats: Uint8Array | null;
  rows: Row[];
  error: unknown;
  sentAt: number;
  scope: QueryScope | undefined;
  /** Given up (its caller already has an error): the answer is dropped when it comes. */
  abandoned: boolean;
  resolve: (rows: Row[]) => void;
  reject: (e: unknown) => void;
}

/** The unanswered queries, in the order they were sent. */
export class InFlight {
  #items: (Pending | undefined)[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  /** The oldest: the query the next answer is for. */
  get first(): Pending | undefined {
    return this.#items[this.#head];
  }

  push(q: Pending): void {
    this.#items.push(q);
  }

  /** Removes the oldest (answered). */
  shift(): void {
    this.#items[this.#head++] = undefined;
    if (this.#head === this.#items.length) {
      this.#items.length = 0;
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Removes and returns all of them. */
  clear(): Pending[] {
    const all = this.#items.slice(this.#head) as Pending[];
    this.#items = [];
    this.#head = 0;
    return all;
  }

  /**
   * Gives up the queries whose scope ended: the deadline passed, or (for those in flight longer
   * than `watchAfterMs`) the caller has gone. Each gets a PgAbortError now; `cancelRunning` is
   * called when the oldest (the one PostgreSQL is running) is among them. Returns how many.
   */
  expire(now: number, watchAfterMs: number, cancelRunning: () => void): number {
    let n = 0;
    for (let i = this.#head; i < this.#items.length; i++) {
      const q = this.#items[i]!;
      const s = q.scope;
      if (s === undefined || q.abandoned) continue;
      let why: PgAbortError | null = null;
      if (now >= s.deadline) why = new PgAbortError("DEADLINE");
      else if (now - q.sentAt >= watchAfterMs && s.gone()) why = new PgAbortError("CLIENT_GONE");
      if (why === null) continue;
      q.abandoned = true;
      q.reject(why);
      n++;
      if (i === this.#head) cancelRunning();
    }
    return n;
  }

  /**
   * When the queries with a scope must be looked at next (performance.now): the earliest of
   * their deadlines, of `watchAfterMs` after each was sent, and for one already older than that
   * (its caller is asked again and again whether it has gone) `everyMs` from `now`. Infinity
   * when there is none.
   */
  nextWatch(now: number, watchAfterMs: number, everyMs: number): number {
    let due = Infinity;
    for (let i = this.#head; i < this.#items.length; i++) {
      const q = this.#items[i]!;
      const s = q.scope;
      if (s === undefined || q.abandoned) continue;
      const ask = q.sentAt + watchAfterMs;
      due = Math.min(due, s.deadline, ask > now ? ask : now + everyMs);
    }
    return due;
  }
}

/**
 * The per-request timeout of a connection: every request gets its own
 * `AbortController`, aborted when the request is still pending `ms` after it
 * started. One timer serves all of a connection's requests: requests start
 * in deadline order (they share `ms`), so the timer only ever waits for the
 * oldest request still pending, and a request that ends needs no timer work.
 *
 * Like `AbortSignal.timeout`'s, the timer does not hold the process open:
 * `fetch` in flight does that itself. A request through an adapter or
 * middleware (plain JavaScript, which may hold nothing open while it waits)
 * is `held`: while one is pending, the timer holds the process open.
 * @module
 */

/** One request under a deadline. */
export interface Pending {
  /** Aborts the request. */
  controller: AbortController;
  /** When it times out (`Date.now()` milliseconds). */
  deadline: number;
  /** Whether the deadline passed before the request was over. */
  expired?: boolean;
  /** Whether the timer holds the process open for it. */
  held: boolean;
}

/** Aborts requests still pending `ms` milliseconds after they started. */
export class Deadlines {
  #ms: number;
  /** The requests pending, in start order (so in deadline order). */
  #pending = new Set<Pending>();
  #timer: unknown;
  /** Pending requests that hold the process open. */
  #held = 0;

  /**
   * Creates an instance.
   *
   * @param ms the timeout of every request, in milliseconds (positive and finite)
   */
  constructor(ms: number) {
    this.#ms = ms;
  }

  /**
   * Starts the clock of one request.
   *
   * @param held whether the timer must hold the process open while the request is pending
   * @param now the time the request starts (`Date.now()`, read once by the caller)
   */
  start(held: boolean, now: number): Pending {
    const pending = { controller: new AbortController(), deadline: now + this.#ms, held };
    this.#pending.add(pending);
    if (held && this.#held++ === 0 && this.#timer !== undefined) holdOpen(this.#timer, true);
    if (this.#timer === undefined) this.#arm(pending.deadline);
    return pending;
  }

  /** Ends the clock of `pending` (the request answered, failed or was aborted). */
  done(pending: Pending): void {
    if (!this.#pending.delete(pending)) return;
    if (pending.held && --this.#held === 0 && this.#timer !== undefined) {
      holdOpen(this.#timer, false);
    }
  }

  #arm(deadline: number): void {
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, deadline - Date.now()));
    holdOpen(this.#timer, this.#held > 0);
  }

  #fire(): void {
    this.#timer = undefined;
    const now = Date.now();
    for (const pending of this.#pending) {
      // A deadline further than the timeout: the system clock went back; count from now.
      pending.deadline = Math.min(pending.deadline, now + this.#ms);
      if (pending.deadline > now) return this.#arm(pending.deadline);
      this.done(pending);
      pending.expired = true;
      pending.controller.abort(new DOMException("The operation timed out", "TimeoutError"));
    }
  }
}

/** Whether a timer holds the process open (Deno and Node; browsers have no such notion). */
function holdOpen(timer: unknown, hold: boolean): void {
  const deno = (globalThis as unknown as { Deno?: Record<string, (id: unknown) => void> }).Deno;
  if (deno?.refTimer) deno[hold ? "refTimer" : "unrefTimer"](timer);
  else (timer as Record<string, (() => void) | undefined>)[hold ? "ref" : "unref"]?.();
}

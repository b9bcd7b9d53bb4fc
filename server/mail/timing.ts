/**
 * Answer timing that does not tell whether an address has an account.
 *
 * Sending a mail takes the mail server's round trips (tens to hundreds of
 * milliseconds); answering for an address that gets no mail takes one
 * lookup. Without care, `/recover`, `/otp`, `/magiclink`, `/resend` and a
 * repeated `/signup` would reveal known addresses by their speed alone.
 *
 * So every mail sent is timed per action (`observe`), and the answer that
 * sends nothing waits about as long (`pad`): the median of the last 21
 * sends of that action (a cold first connection does not skew it), with
 * ±15 % jitter, counted from when the work that
 * replaces the send began. Before any mail of an action went out there is
 * nothing to imitate and nothing to tell apart, so nothing is waited.
 *
 *   const t0 = timing.now();
 *   await sendTheMail();
 *   timing.observe("recovery", timing.now() - t0);
 *   // elsewhere, for an unknown address:
 *   await timing.pad("recovery", t0);
 *
 * Wall time, not the service clock: this is about what a caller measures.
 */

/** A send slower than this (a stalled mail server) is not imitated beyond it. */
const MAX_OBSERVED_MS = 3_000;
/** How many recent sends of an action the estimate looks at. */
const WINDOW = 21;

/** Recent per-action send times and the padding that imitates them. */
export class AnswerTiming {
  #recent = new Map<string, number[]>();

  /** Milliseconds, monotonic; replaceable in tests. */
  now: () => number = () => performance.now();
  /** Waits `ms`; replaceable in tests. */
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms));
  /** A number in [0, 1); replaceable in tests. */
  random: () => number = Math.random;

  /** Records how long sending a mail of `action` took. */
  observe(action: string, ms: number): void {
    let list = this.#recent.get(action);
    if (!list) this.#recent.set(action, list = []);
    list.push(Math.min(Math.max(ms, 0), MAX_OBSERVED_MS));
    if (list.length > WINDOW) list.shift();
  }

  /** The current estimate for `action` in ms (0 before any send). */
  expected(action: string): number {
    const list = this.#recent.get(action);
    if (!list?.length) return 0;
    const sorted = [...list].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  }

  /** Waits until about as long as a send of `action` has passed since `startedAt`. */
  async pad(action: string, startedAt: number): Promise<void> {
    const target = this.expected(action) * (0.85 + 0.3 * this.random());
    const wait = target - (this.now() - startedAt);
    if (wait > 0) await this.sleep(wait);
  }
}

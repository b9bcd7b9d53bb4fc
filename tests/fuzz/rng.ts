/**
 * A small seeded pseudo-random generator (mulberry32) so that a fuzz run is
 * reproducible: the same seed and the same server code give the same requests
 * in the same order (concurrency only changes which answers interleave).
 */
export class Rng {
  #s: number;
  constructor(readonly seed: number) {
    this.#s = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }

  /** A child generator (independent stream) derived from this one. */
  fork(): Rng {
    return new Rng(Math.floor(this.next() * 0xffffffff));
  }

  /** A version-4-shaped UUID drawn from this generator. */
  uuid(): string {
    const h = Array.from({ length: 32 }, () => this.int(16).toString(16));
    h[12] = "4";
    h[16] = "89ab"[this.int(4)];
    const s = h.join("");
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${
      s.slice(20)
    }`;
  }
}

/** The seed of this run: FUZZ_SEED when set, else a fresh one (always printed). */
export function runSeed(): number {
  const env = Deno.env.get("FUZZ_SEED");
  if (env !== undefined && env !== "") {
    const n = Number(env);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
      throw new TypeError(`FUZZ_SEED must be an integer in [0, 2^32), got ${JSON.stringify(env)}`);
    }
    return n;
  }
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

/**
 * The single-core bcrypt cost-10 verify time with hash-wasm (what the
 * server's worker pool runs): the ceiling of the password grant is
 * cores / verify time.
 */
import { bcrypt, bcryptVerify } from "hash-wasm";

/** Verify timings in milliseconds. */
export interface BcryptTiming {
  cost: number;
  samples: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
}

/** Times `samples` verifications of one cost-10 hash on this thread. */
export async function measureBcryptVerify(samples = 15, cost = 10): Promise<BcryptTiming> {
  const password = "correct horse battery staple";
  const hash = await bcrypt({
    password,
    salt: crypto.getRandomValues(new Uint8Array(16)),
    costFactor: cost,
    outputType: "encoded",
  });
  // one warm-up (WASM compilation)
  if (!await bcryptVerify({ password, hash })) throw new Error("bcrypt verify failed");
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await bcryptVerify({ password, hash });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    cost,
    samples,
    medianMs: r(times[Math.floor(times.length / 2)]),
    minMs: r(times[0]),
    maxMs: r(times[times.length - 1]),
  };
}

/**
 * Verifications per second with `workers` workers verifying at once for `ms`:
 * what the machine actually delivers in parallel at the moment (shared cores
 * included), beside the ideal cores / single-core time.
 */
export async function measureBcryptParallel(workers: number, ms = 3000): Promise<number> {
  const password = "correct horse battery staple";
  const hash = await bcrypt({
    password,
    salt: crypto.getRandomValues(new Uint8Array(16)),
    costFactor: 10,
    outputType: "encoded",
  });
  const rates = await Promise.all(
    Array.from({ length: workers }, () =>
      new Promise<number>((resolve, reject) => {
        const w = new Worker(new URL("./bcrypt_worker.ts", import.meta.url), { type: "module" });
        w.onmessage = (ev: MessageEvent<number>) => {
          w.terminate();
          resolve(ev.data);
        };
        w.onerror = (e) => {
          w.terminate();
          reject(e);
        };
        w.postMessage({ password, hash, ms });
      })),
  );
  return Math.round(rates.reduce((a, b) => a + b, 0) * 10) / 10;
}

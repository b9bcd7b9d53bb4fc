/// <reference lib="deno.worker" />
/** Verifies one bcrypt hash in a loop for the given milliseconds; posts verifies per second. */
import { bcryptVerify } from "hash-wasm";

self.onmessage = async (ev: MessageEvent<{ password: string; hash: string; ms: number }>) => {
  const { password, hash, ms } = ev.data;
  await bcryptVerify({ password, hash }); // warm-up
  const start = performance.now();
  const end = start + ms;
  let n = 0;
  while (performance.now() < end) {
    await bcryptVerify({ password, hash });
    n++;
  }
  self.postMessage(n / ((performance.now() - start) / 1000));
};

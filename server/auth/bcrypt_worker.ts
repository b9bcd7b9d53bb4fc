/// <reference lib="deno.worker" />
/**
 * Runs bcrypt (and argon2 verification of imported hashes) off the main event
 * loop. Messages: {id, op: "hash", password, cost} | {id, op: "verify", password, hash}.
 */
import { argon2Verify, bcrypt, bcryptVerify } from "hash-wasm";

interface Job {
  id: number;
  op: "hash" | "verify";
  password: string;
  cost?: number;
  hash?: string;
}

self.onmessage = async (ev: MessageEvent<Job>) => {
  const job = ev.data;
  try {
    if (job.op === "hash") {
      const salt = crypto.getRandomValues(new Uint8Array(16));
      const out = await bcrypt({
        password: job.password,
        salt,
        costFactor: job.cost ?? 10,
        outputType: "encoded",
      });
      self.postMessage({ id: job.id, result: out });
    } else {
      const hash = job.hash ?? "";
      let ok = false;
      if (hash.startsWith("$argon2")) ok = await argon2Verify({ password: job.password, hash });
      else {
        // hash-wasm reads $2a$/$2b$; $2y$ (PHP) is the same algorithm
        const norm = hash.startsWith("$2y$") || hash.startsWith("$2x$")
          ? "$2b$" + hash.slice(4)
          : hash;
        ok = await bcryptVerify({ password: job.password, hash: norm });
      }
      self.postMessage({ id: job.id, result: ok });
    }
  } catch (e) {
    self.postMessage({ id: job.id, error: e instanceof Error ? e.message : String(e) });
  }
};

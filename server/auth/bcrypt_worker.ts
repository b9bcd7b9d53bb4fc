/// <reference lib="deno.worker" />
/**
 * Runs bcrypt (and argon2 verification of imported hashes) off the main event
 * loop. Messages: {op: "nice", nice} first, then
 * {id, op: "hash", password, cost} | {id, op: "verify", password, hash}.
 */
import { argon2Verify, bcrypt, bcryptVerify } from "hash-wasm";
import { getPriority, setPriority } from "node:os";

interface Job {
  id: number;
  op: "hash" | "verify" | "nice";
  password: string;
  cost?: number;
  hash?: string;
  nice?: number;
}

/**
 * Lowers this thread's scheduling priority to at least `nice` (Linux keeps a
 * nice value per thread, and setpriority(PRIO_PROCESS, 0) applies to the
 * calling thread), so the event loop and PostgreSQL win the cores whenever
 * they have work and a sign-in's hashing takes only what is left. Quietly
 * nothing when the permission (`--allow-sys=getPriority,setPriority`) is
 * missing or the platform is not Linux: the hashing is the same, only its
 * priority is not.
 */
function lowerPriority(nice: number): void {
  if (Deno.build.os !== "linux" || !(nice > 0)) return;
  try {
    const granted = (kind: string) =>
      Deno.permissions.querySync({ name: "sys", kind } as Deno.PermissionDescriptor).state ===
        "granted";
    if (!granted("getPriority") || !granted("setPriority")) return;
    if (getPriority(0) < nice) setPriority(0, Math.min(19, nice));
  } catch {
    // not permitted here (a container's seccomp profile, an unknown platform): keep the default
  }
}

self.onmessage = async (ev: MessageEvent<Job>) => {
  const job = ev.data;
  if (job.op === "nice") return lowerPriority(job.nice ?? 0);
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

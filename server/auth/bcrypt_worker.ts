/// <reference lib="deno.worker" />
/**
 * Runs bcrypt (and argon2 verification of imported hashes) off the main event
 * loop. Messages: {op: "init", nice, cancel} first, then
 * {id, slot, op: "hash", password, cost} | {id, slot, op: "verify", password, hash}.
 * `cancel` (an Int32Array on shared memory) holds at `slot` the id of a job
 * whose request went away: such a job is answered {id, skipped: true} without
 * hashing, if it has not begun (server/auth/passwords.ts).
 */
import { argon2Verify, bcrypt, bcryptVerify } from "hash-wasm";
import { getPriority, setPriority } from "node:os";

interface Job {
  id: number;
  slot: number;
  op: "hash" | "verify" | "init";
  cancel?: Int32Array;
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

let cancel: Int32Array | undefined;
/** Jobs received and not yet begun, in order: one is computed at a time. */
const jobs: Job[] = [];
let running = false;

self.onmessage = (ev: MessageEvent<Job>) => {
  const job = ev.data;
  if (job.op === "init") {
    cancel = job.cancel;
    return lowerPriority(job.nice ?? 0);
  }
  jobs.push(job);
  if (!running) void runJobs();
};

/**
 * Computes the jobs one after the other. A job's cancel mark is read right
 * before it begins (not when it arrives: it may arrive while another is
 * computed), so a request that went away meanwhile costs no hashing.
 */
async function runJobs(): Promise<void> {
  running = true;
  try {
    for (let job = jobs.shift(); job; job = jobs.shift()) {
      if (cancel && Atomics.load(cancel, job.slot) === job.id) {
        self.postMessage({ id: job.id, skipped: true });
      } else {
        self.postMessage(await perform(job));
      }
    }
  } finally {
    running = false;
  }
}

async function perform(job: Job): Promise<{ id: number; result?: unknown; error?: string }> {
  try {
    if (job.op === "hash") {
      const salt = crypto.getRandomValues(new Uint8Array(16));
      const out = await bcrypt({
        password: job.password,
        salt,
        costFactor: job.cost ?? 10,
        outputType: "encoded",
      });
      return { id: job.id, result: out };
    }
    const hash = job.hash ?? "";
    if (hash.startsWith("$argon2")) {
      return { id: job.id, result: await argon2Verify({ password: job.password, hash }) };
    }
    // hash-wasm reads $2a$/$2b$; $2y$ (PHP) is the same algorithm
    const norm = hash.startsWith("$2y$") || hash.startsWith("$2x$") ? "$2b$" + hash.slice(4) : hash;
    return { id: job.id, result: await bcryptVerify({ password: job.password, hash: norm }) };
  } catch (e) {
    return { id: job.id, error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Password hashing: bcrypt cost 10 (GoTrue-compatible `$2a$` hashes, so users
 * can be imported either way), computed in a pool of workers sized to the
 * cores so that one sign-in never stalls other requests. Verification also
 * accepts `$2b$`/`$2y$` bcrypt and argon2 hashes of imported users.
 */
import { AuthError } from "./errors.ts";
import type { Config } from "../config.ts";

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  /** The worker the job went to. */
  worker: number;
}

/** A bcrypt worker died (it could not load, or crashed): the job has no answer. */
export class HasherUnavailableError extends Error {
  constructor(why: string) {
    super(`password hashing unavailable: ${why}`);
    this.name = "HasherUnavailableError";
  }
}

/**
 * Jobs one worker holds at most: the one it computes and the next, so that it
 * starts the next hash the moment it finishes one instead of waiting for the
 * main thread (busy with requests) to hand it over.
 */
const JOBS_PER_WORKER = 2;

/** A pool of bcrypt workers. */
export class PasswordHasher {
  #workers: Worker[] = [];
  #busy: number[] = [];
  #pending = new Map<number, Pending>();
  #next = 1;
  #queue: { msg: Record<string, unknown>; p: Omit<Pending, "worker"> }[] = [];

  constructor(
    readonly size = Math.max(1, navigator.hardwareConcurrency || 2),
    readonly cost = 10,
    /** The worker module (tests replace it). */
    readonly workerUrl: URL = new URL("./bcrypt_worker.ts", import.meta.url),
    /**
     * The workers' nice value on Linux (PASSWORD_HASHER_NICE; 0: as the
     * process), so requests without hashing keep their latency while
     * sign-ins fill the cores (bcrypt_worker.ts).
     */
    readonly nice = 0,
  ) {}

  #start(i: number): Worker {
    const w = new Worker(this.workerUrl, { type: "module" });
    if (this.nice > 0) w.postMessage({ op: "nice", nice: this.nice });
    // A worker that cannot load or crashes would leave its jobs waiting
    // forever: fail them, and start a fresh worker for the next job.
    w.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      w.terminate();
      if (this.#workers[i] === w) {
        delete this.#workers[i];
        this.#busy[i] = 0;
      }
      for (const [id, p] of this.#pending) {
        if (p.worker !== i) continue;
        this.#pending.delete(id);
        p.reject(new HasherUnavailableError(ev.message || "the worker failed"));
      }
      this.#drain();
    };
    w.onmessage = (ev: MessageEvent<{ id: number; result?: unknown; error?: string }>) => {
      const p = this.#pending.get(ev.data.id);
      this.#pending.delete(ev.data.id);
      this.#busy[i]--;
      if (p) {
        ev.data.error !== undefined
          ? p.reject(new Error(ev.data.error))
          : p.resolve(ev.data.result);
      }
      this.#drain();
    };
    return w;
  }

  #drain(): void {
    while (this.#queue.length) {
      // The least busy worker with room (an idle one first).
      let idx = -1;
      for (let i = 0; i < this.size; i++) {
        if (!this.#workers[i]) {
          this.#workers[i] = this.#start(i);
          this.#busy[i] = 0;
        }
        if (this.#busy[i] < JOBS_PER_WORKER && (idx < 0 || this.#busy[i] < this.#busy[idx])) {
          idx = i;
        }
      }
      if (idx < 0) return;
      const job = this.#queue.shift()!;
      const id = this.#next++;
      this.#pending.set(id, { ...job.p, worker: idx });
      this.#busy[idx]++;
      this.#workers[idx].postMessage({ ...job.msg, id });
    }
  }

  #run<T>(msg: Record<string, unknown>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ msg, p: { resolve: resolve as (v: unknown) => void, reject } });
      this.#drain();
    });
  }

  /**
   * A bcrypt hash of the password. bcrypt reads at most 72 bytes: a longer
   * password is validation_failed here, never a 500 (POST /admin/users
   * answers GoTrue's 400 before; paths with a strength check refuse it too).
   */
  hash(password: string): Promise<string> {
    if (new TextEncoder().encode(password).length > 72) {
      return Promise.reject(
        new AuthError("validation_failed", "Password cannot be longer than 72 bytes"),
      );
    }
    return this.#run<string>({ op: "hash", password, cost: this.cost });
  }

  /**
   * True when the password matches the hash; false for an empty, unknown or
   * malformed hash. Throws HasherUnavailableError when no worker could answer.
   */
  async verify(password: string, hash: string | null | undefined): Promise<boolean> {
    if (!hash || !/^\$(2[abxy]|argon2(id|i|d))\$/.test(hash)) return false;
    try {
      return await this.#run<boolean>({ op: "verify", password, hash });
    } catch (e) {
      if (e instanceof HasherUnavailableError) throw e;
      return false;
    }
  }

  /** True when a stored hash should be replaced by a fresh bcrypt one (imported formats). */
  needsRehash(hash: string): boolean {
    return !hash.startsWith(`$2a$${String(this.cost).padStart(2, "0")}$`) &&
      !hash.startsWith(`$2b$${String(this.cost).padStart(2, "0")}$`);
  }

  /** Stops the workers. */
  close(): void {
    for (const w of this.#workers) w?.terminate();
    this.#workers = [];
    for (const p of this.#pending.values()) p.reject(new Error("password hasher closed"));
    this.#pending.clear();
  }
}

/**
 * Checks PASSWORD_MIN_LENGTH and PASSWORD_REQUIRED_CHARACTERS; throws 422
 * weak_password with `weak_password.reasons` (GoTrue's shape).
 */
export function checkPasswordStrength(config: Config, password: string): void {
  const reasons: string[] = [];
  const messages: string[] = [];
  if ([...password].length < config.password.minLength) {
    reasons.push("length");
    messages.push(`Password should be at least ${config.password.minLength} characters.`);
  }
  const missing = config.password.requiredCharacters.filter((set) =>
    ![...password].some((ch) => set.includes(ch))
  );
  if (missing.length) {
    reasons.push("characters");
    messages.push(`Password should contain at least one character of each: ${missing.join(", ")}.`);
  }
  if (reasons.length) {
    throw new AuthError("weak_password", messages.join(" "), {
      details: { weak_password: { reasons } },
    });
  }
  if (new TextEncoder().encode(password).length > 72) {
    throw new AuthError("validation_failed", "Password cannot be longer than 72 bytes");
  }
}

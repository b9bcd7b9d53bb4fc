/**
 * Password hashing: bcrypt cost 10 (GoTrue-compatible `$2a$` hashes, so users
 * can be imported either way), computed in a pool of workers sized to the
 * cores so that one sign-in never stalls other requests. Verification also
 * accepts `$2b$`/`$2y$` bcrypt and argon2 hashes of imported users.
 */
import { AuthError } from "./errors.ts";
import type { Config } from "../config/mod.ts";

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  /** The worker the job went to. */
  worker: number;
}

/** A job not yet answered: waiting here, or (with its id) handed to a worker. */
interface Job {
  msg: Record<string, unknown>;
  p: Omit<Pending, "worker">;
  /** Set when the job is handed to a worker. */
  id?: number;
}

/** A bcrypt worker died (it could not load, or crashed): the job has no answer. */
export class HasherUnavailableError extends Error {
  constructor(why: string) {
    super(`password hashing unavailable: ${why}`);
    this.name = "HasherUnavailableError";
  }
}

/**
 * The request a hash was for went away (its client closed the connection)
 * before a worker started the hash: the hash was not computed, and nobody is
 * there to answer. Not a wrong password: a sign-in that ends this way counts
 * as no attempt at all.
 */
export class HashAbandonedError extends Error {
  constructor() {
    // (a message, not an error code: tests/conformance/compat_test.ts reads `super("...")` as one)
    const message = "the request went away before its password was hashed";
    super(message);
    this.name = "HashAbandonedError";
  }
}

/**
 * Slots of the marks by which the main thread tells a worker to skip a job it
 * was handed (a job's slot: its id modulo this; a mark is the job's id, so a
 * slot another job reuses never skips the wrong one).
 */
const CANCEL_SLOTS = 1024;

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
  #queue: Job[] = [];
  /** Marks of handed-over jobs whose request went away (shared with the workers). */
  #cancel = new Int32Array(new SharedArrayBuffer(4 * CANCEL_SLOTS));

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
    w.postMessage({ op: "init", nice: this.nice, cancel: this.#cancel });
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
    w.onmessage = (
      ev: MessageEvent<{ id: number; result?: unknown; error?: string; skipped?: boolean }>,
    ) => {
      const p = this.#pending.get(ev.data.id);
      this.#pending.delete(ev.data.id);
      this.#busy[i]--;
      if (p) {
        if (ev.data.skipped) p.reject(new HashAbandonedError());
        else if (ev.data.error !== undefined) p.reject(new Error(ev.data.error));
        else p.resolve(ev.data.result);
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
      const id = this.#next;
      this.#next = this.#next >= 0x7fffffff ? 1 : this.#next + 1;
      job.id = id;
      this.#pending.set(id, { ...job.p, worker: idx });
      this.#busy[idx]++;
      this.#workers[idx].postMessage({ ...job.msg, id, slot: id % CANCEL_SLOTS });
    }
  }

  /**
   * Runs `msg` in a worker. When `signal` aborts (the request's client went
   * away) before a worker has started the job, the job is dropped and the
   * promise rejects with HashAbandonedError: under load, the queue then holds
   * only hashes somebody waits for. A job already started runs to its end.
   */
  #run<T>(msg: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(new HashAbandonedError());
    return new Promise<T>((resolve, reject) => {
      const job: Job = { msg, p: { resolve: resolve as (v: unknown) => void, reject } };
      if (signal) {
        const abandon = () => {
          const at = this.#queue.indexOf(job);
          if (at >= 0) {
            this.#queue.splice(at, 1);
            job.p.reject(new HashAbandonedError());
          } else if (job.id !== undefined) {
            // Handed over: the worker skips it unless it has begun (bcrypt_worker.ts).
            Atomics.store(this.#cancel, job.id % CANCEL_SLOTS, job.id);
          }
        };
        signal.addEventListener("abort", abandon, { once: true });
        const done = () => signal.removeEventListener("abort", abandon);
        job.p = {
          resolve: (v) => {
            done();
            resolve(v as T);
          },
          reject: (e) => {
            done();
            reject(e);
          },
        };
      }
      this.#queue.push(job);
      this.#drain();
    });
  }

  /**
   * A bcrypt hash of the password. bcrypt reads at most 72 bytes: a longer
   * password is validation_failed here, never a 500 (POST /admin/users
   * answers GoTrue's 400 before; paths with a strength check refuse it too).
   * With `signal` (the request's), a hash not yet begun when it aborts is
   * dropped: HashAbandonedError.
   */
  hash(password: string, signal?: AbortSignal): Promise<string> {
    if (new TextEncoder().encode(password).length > 72) {
      return Promise.reject(
        new AuthError("validation_failed", "Password cannot be longer than 72 bytes"),
      );
    }
    return this.#run<string>({ op: "hash", password, cost: this.cost }, signal);
  }

  /**
   * True when the password matches the hash; false for an empty, unknown or
   * malformed hash. Throws HasherUnavailableError when no worker could answer,
   * and HashAbandonedError when `signal` (the request's) aborted before the
   * verification began: that is no answer, never a wrong password.
   */
  async verify(
    password: string,
    hash: string | null | undefined,
    signal?: AbortSignal,
  ): Promise<boolean> {
    if (!hash || !/^\$(2[abxy]|argon2(id|i|d))\$/.test(hash)) return false;
    try {
      return await this.#run<boolean>({ op: "verify", password, hash }, signal);
    } catch (e) {
      if (e instanceof HasherUnavailableError || e instanceof HashAbandonedError) throw e;
      return false;
    }
  }

  /** Jobs waiting for a worker (not yet handed to one). */
  get waiting(): number {
    return this.#queue.length;
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

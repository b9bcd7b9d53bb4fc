/** The bcrypt worker pool: GoTrue-compatible hashes, computed off the event loop. */
import assert from "node:assert/strict";
import {
  HashAbandonedError,
  HasherUnavailableError,
  PasswordHasher,
} from "../../../server/auth/passwords.ts";
import { BLOCKER_HASH } from "./_helpers.ts";

Deno.test("hashes are bcrypt cost 10 ($2a$10$) and verify; $2b$ and $2y$ of other systems verify too", async () => {
  const h = new PasswordHasher(2);
  try {
    const hash = await h.hash("correct horse");
    assert.match(hash, /^\$2a\$10\$[./A-Za-z0-9]{53}$/);
    assert.equal(await h.verify("correct horse", hash), true);
    assert.equal(await h.verify("wrong horse", hash), false);
    assert.equal(await h.verify("correct horse", "$2b$" + hash.slice(4)), true);
    assert.equal(await h.verify("correct horse", "$2y$" + hash.slice(4)), true);
    assert.equal(h.needsRehash(hash), false);
    assert.equal(h.needsRehash("$2y$" + hash.slice(4)), true);
    // malformed or empty hashes are a plain "no", never an error
    assert.equal(await h.verify("x", "$2a$10$short"), false);
    assert.equal(await h.verify("x", ""), false);
    assert.equal(await h.verify("x", null), false);
  } finally {
    h.close();
  }
});

Deno.test("hashing runs off the event loop: a timer fires while six hashes are computed", async () => {
  const h = new PasswordHasher(2);
  try {
    await h.hash("warm up the workers");
    // Six cost-10 hashes are hundreds of ms of CPU. Computed on this thread,
    // they would all be done before a zero-delay timer could fire: the timer
    // only runs once the thread is free. In the workers, the timer fires while
    // they are still pending. No clock is read: only the order of two events.
    let hashed = false;
    const all = Promise.all([1, 2, 3, 4, 5, 6].map((i) => h.hash(`password ${i}`)))
      .then(() => hashed = true);
    const pendingAtTimer = await new Promise<boolean>((r) => setTimeout(() => r(!hashed), 0));
    await all;
    assert.ok(pendingAtTimer, "the timer only fired after every hash was done");
  } finally {
    h.close();
  }
});

Deno.test("a worker that cannot load or crashes fails its jobs instead of leaving them waiting", async () => {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-worker-" });
  try {
    const broken = `${dir}/broken.ts`;
    await Deno.writeTextFile(broken, `throw new Error("cannot load");\n`);
    const crashing = `${dir}/crashing.ts`;
    await Deno.writeTextFile(
      crashing,
      `self.onmessage = () => { throw new Error("crashed mid-job"); };\n`,
    );
    for (const file of [broken, crashing]) {
      const h = new PasswordHasher(1, 10, new URL(`file://${file}`));
      try {
        await assert.rejects(h.hash("a"), HasherUnavailableError);
        // a sign-in must not read "wrong password" when nothing checked it
        await assert.rejects(
          h.verify("a", "$2a$10$6o5DaM8FqRojpRcuBFQnAezOpdP63qvSKUuJNh26Ka8LLShwWfCqO"),
          HasherUnavailableError,
        );
        // and queued jobs each get their answer too
        const queued = await Promise.allSettled([h.hash("b"), h.hash("c"), h.hash("d")]);
        assert.deepEqual(queued.map((q) => q.status), ["rejected", "rejected", "rejected"]);
      } finally {
        h.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "on Linux the workers run at PASSWORD_HASHER_NICE, the event loop's thread unchanged",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const niceOf = (tid: string) => {
      const stat = Deno.readTextFileSync(`/proc/self/task/${tid}/stat`);
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
    };
    const before = new Set([...Deno.readDirSync("/proc/self/task")].map((e) => e.name));
    const processNice = niceOf(String(Deno.pid));
    const h = new PasswordHasher(2, 10, undefined, 7);
    try {
      // two hashes at once: both workers have started and read their first message
      await Promise.all([h.hash("one"), h.hash("two")]);
      const fresh = [...Deno.readDirSync("/proc/self/task")].map((e) => e.name)
        .filter((tid) => !before.has(tid));
      // (a test run under `nice -n 10` keeps its 10: the workers never raise their priority)
      const expected = Math.max(7, processNice);
      assert.equal(fresh.map(niceOf).filter((n) => n === expected).length, 2);
      assert.equal(niceOf(String(Deno.pid)), processNice);
    } finally {
      h.close();
    }
  },
});

Deno.test("a job whose request went away is dropped: waiting here, or handed to a busy worker", async () => {
  const h = new PasswordHasher(1);
  try {
    const hash = await h.hash("right"); // the worker is up
    // One worker holds two jobs: the blocker it computes and `handed`; `queued` waits here.
    const blocker = h.verify("blocker", BLOCKER_HASH);
    let blockerDone = false;
    void blocker.then(() => blockerDone = true);
    const handedGone = new AbortController();
    const queuedGone = new AbortController();
    const handed = h.verify("right", hash, handedGone.signal);
    const queued = h.hash("another", queuedGone.signal);
    const kept = h.verify("right", hash, new AbortController().signal);
    assert.equal(h.waiting, 2, "`queued` and `kept` wait for the worker");
    // Both requests go away in this same synchronous turn: the worker is still on the blocker.
    handedGone.abort();
    queuedGone.abort();
    assert.equal(h.waiting, 1, "the abandoned job left the queue at once");
    await assert.rejects(queued, HashAbandonedError);
    assert.equal(blockerDone, false, "dropped without waiting for the worker");
    // The handed-over job is skipped by the worker, never answered as a wrong password.
    await assert.rejects(handed, HashAbandonedError);
    assert.equal(await blocker, true);
    assert.equal(await kept, true, "the job behind them still gets its answer");
    // An already aborted signal: no job at all.
    await assert.rejects(h.verify("right", hash, AbortSignal.abort()), HashAbandonedError);
    assert.equal(h.waiting, 0);
    assert.equal(await h.verify("wrong", hash), false);
  } finally {
    h.close();
  }
});

/** The bcrypt worker pool: GoTrue-compatible hashes, computed off the event loop. */
import assert from "node:assert/strict";
import { HasherUnavailableError, PasswordHasher } from "../../../server/auth/passwords.ts";

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

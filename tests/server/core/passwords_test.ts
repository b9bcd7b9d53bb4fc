/** The bcrypt worker pool: GoTrue-compatible hashes, computed off the event loop. */
import assert from "node:assert/strict";
import { PasswordHasher } from "../../../server/auth/passwords.ts";

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

Deno.test("hashing runs off the event loop: timers keep firing while four hashes are computed", async () => {
  const h = new PasswordHasher(2);
  try {
    await h.hash("warm up the workers");
    let ticks = 0;
    let running = true;
    const tick = () => {
      ticks++;
      if (running) setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
    // Four cost-10 hashes take hundreds of ms of CPU. Computed on this thread
    // they would block it in a few long stretches, letting a handful of
    // timers through; in the workers the loop turns freely meanwhile.
    await Promise.all([1, 2, 3, 4].map((i) => h.hash(`password ${i}`)));
    running = false;
    assert.ok(ticks >= 20, `only ${ticks} timer turns while hashing`);
  } finally {
    h.close();
  }
});

import assert from "node:assert/strict";
import { AuthError } from "./errors.ts";
import { isBanned, refuseBanned } from "./ban.ts";

const NOW = new Date("2026-06-01T12:00:00Z");

Deno.test("isBanned: only while banned_until lies after now", () => {
  assert.equal(isBanned({ banned_until: null }, NOW), false);
  assert.equal(isBanned({ banned_until: new Date("2026-06-01T12:00:01Z") }, NOW), true);
  assert.equal(isBanned({ banned_until: "2026-06-02T00:00:00Z" }, NOW), true, "a stored string");
  assert.equal(isBanned({ banned_until: NOW }, NOW), false, "a ban that ends now is over");
  assert.equal(isBanned({ banned_until: "2026-05-01T00:00:00Z" }, NOW), false);
});

Deno.test("refuseBanned: user_banned, in the situation of a token grant when asked", () => {
  const banned = { banned_until: new Date("2030-01-01T00:00:00Z") };
  refuseBanned({ banned_until: null }, NOW);
  assert.throws(() => refuseBanned(banned, NOW), (e: unknown) => {
    assert.ok(e instanceof AuthError);
    assert.equal(e.errorCode, "user_banned");
    assert.equal(e.situation, undefined);
    return true;
  });
  assert.throws(() => refuseBanned(banned, NOW, "oauth"), (e: unknown) => {
    assert.ok(e instanceof AuthError);
    assert.equal(e.situation, "oauth");
    return true;
  });
});

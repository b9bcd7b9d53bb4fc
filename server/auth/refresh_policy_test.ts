/**
 * The refresh rule without a database: each case builds the rows the grant
 * would read and checks the decision. The cases follow GoTrue's
 * `internal/api/token_refresh_test.go` (rotation, reuse within and outside
 * the interval, reuse of an older token) plus ours for bans and expiry.
 */
import assert from "node:assert/strict";
import { decideRefresh, type RefreshFacts, type RefreshSettings } from "./refresh_policy.ts";

const NOW = new Date("2026-01-01T12:00:00Z");
const ago = (sec: number) => new Date(NOW.getTime() - sec * 1000);
const ROTATING: RefreshSettings = { rotationEnabled: true, reuseIntervalSec: 10 };
const FIXED: RefreshSettings = { rotationEnabled: false, reuseIntervalSec: 10 };

/** A live token of a live session of a user in good standing. */
function facts(over: Partial<RefreshFacts> = {}): RefreshFacts {
  return {
    token: { revoked: false, updated_at: ago(60) },
    session: { not_after: null },
    user: { banned_until: null },
    child: null,
    derivedChildHash: "child-hash",
    now: NOW,
    ...over,
  };
}

/** A token revoked `sec` seconds ago whose newest child is `child`. */
function revoked(sec: number, child: RefreshFacts["child"]): Partial<RefreshFacts> {
  return { token: { revoked: true, updated_at: ago(sec) }, child };
}

Deno.test("a live token rotates when rotation is on", () => {
  assert.equal(decideRefresh(facts(), ROTATING), "rotate");
});

Deno.test("a live token is answered with itself when rotation is off", () => {
  assert.equal(decideRefresh(facts(), FIXED), "keep");
});

Deno.test("an unknown token, or one whose session or user is gone, is not found", () => {
  assert.equal(decideRefresh(facts({ token: null }), ROTATING), "not_found");
  assert.equal(decideRefresh(facts({ session: null }), ROTATING), "not_found");
  assert.equal(decideRefresh(facts({ user: null }), ROTATING), "not_found");
});

Deno.test("a banned user gets nothing until the ban ends", () => {
  assert.equal(decideRefresh(facts({ user: { banned_until: ago(-3600) } }), ROTATING), "banned");
  assert.equal(
    decideRefresh(facts({ user: { banned_until: ago(-1).toISOString() } }), FIXED),
    "banned",
  );
  assert.equal(decideRefresh(facts({ user: { banned_until: ago(1) } }), ROTATING), "rotate");
});

Deno.test("a session past not_after is expired, at the instant itself too", () => {
  assert.equal(decideRefresh(facts({ session: { not_after: NOW } }), ROTATING), "expired");
  assert.equal(decideRefresh(facts({ session: { not_after: ago(5) } }), FIXED), "expired");
  assert.equal(decideRefresh(facts({ session: { not_after: ago(-5) } }), ROTATING), "rotate");
});

Deno.test("a ban is reported before an expiry", () => {
  const f = facts({ user: { banned_until: ago(-60) }, session: { not_after: ago(60) } });
  assert.equal(decideRefresh(f, ROTATING), "banned");
});

Deno.test("the previous token within the reuse interval gets its current child again", () => {
  const child = { revoked: false, token_hash: "child-hash" };
  assert.equal(decideRefresh(facts(revoked(3, child)), ROTATING), "return_child");
  // The interval's last second still counts.
  assert.equal(decideRefresh(facts(revoked(10, child)), ROTATING), "return_child");
});

Deno.test("the previous token after the reuse interval revokes the family", () => {
  const child = { revoked: false, token_hash: "child-hash" };
  assert.equal(decideRefresh(facts(revoked(11, child)), ROTATING), "revoke_family");
  assert.equal(
    decideRefresh(facts(revoked(0, child)), { rotationEnabled: true, reuseIntervalSec: 0 }),
    "return_child",
  );
});

Deno.test("an older token revokes the family even within the interval", () => {
  // Its child was rotated in turn (revoked), or is not the child it derives, or is missing.
  const f1 = facts(revoked(1, { revoked: true, token_hash: "child-hash" }));
  assert.equal(decideRefresh(f1, ROTATING), "revoke_family");
  const f2 = facts(revoked(1, { revoked: false, token_hash: "another-hash" }));
  assert.equal(decideRefresh(f2, ROTATING), "revoke_family");
  assert.equal(decideRefresh(facts(revoked(1, null)), ROTATING), "revoke_family");
  const f3 = facts({ ...revoked(1, { revoked: false, token_hash: "x" }), derivedChildHash: null });
  assert.equal(decideRefresh(f3, ROTATING), "revoke_family");
});

Deno.test("a revoked token is refused without touching the family when rotation is off", () => {
  const child = { revoked: false, token_hash: "child-hash" };
  assert.equal(decideRefresh(facts(revoked(1, child)), FIXED), "reused");
  assert.equal(decideRefresh(facts(revoked(3600, null)), FIXED), "reused");
});

/**
 * The refresh rule without a database: each case builds the rows the grant
 * would read and checks the decision. The cases follow GoTrue's
 * `internal/tokens/service_test.go` (RefreshTokenV2Suite: normal use, a
 * failed save answered at any age, concurrent reuse, malicious reuse after
 * the interval) plus ours for bans and expiry.
 */
import assert from "node:assert/strict";
import {
  decideRefresh,
  generationsToRead,
  MAX_GENERATIONS,
  type RefreshFacts,
  type RefreshSettings,
} from "./refresh_policy.ts";

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
    current: null,
    now: NOW,
    ...over,
  };
}

/** A token used (revoked) `sec` seconds ago that leads to the live token `current`. */
function revoked(sec: number, current: RefreshFacts["current"]): Partial<RefreshFacts> {
  return { token: { revoked: true, updated_at: ago(sec) }, current };
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

Deno.test("the parent of the live token gets it back at any age", () => {
  // The client never saw the answer that carried the live token (GoTrue: the active token's
  // parent, v2's counter one behind).
  const parentOfLive = { generation: 1 };
  assert.equal(decideRefresh(facts(revoked(3, parentOfLive)), ROTATING), "return_current");
  assert.equal(decideRefresh(facts(revoked(12.7, parentOfLive)), ROTATING), "return_current");
  assert.equal(decideRefresh(facts(revoked(86_400, parentOfLive)), ROTATING), "return_current");
  const none: RefreshSettings = { rotationEnabled: true, reuseIntervalSec: 0 };
  assert.equal(decideRefresh(facts(revoked(1, parentOfLive)), none), "return_current");
});

Deno.test("an older token used within the reuse interval gets the live token", () => {
  // Two tabs: one refreshed twice while the other's refresh of the first token was on its way.
  assert.equal(decideRefresh(facts(revoked(2, { generation: 2 })), ROTATING), "return_current");
  assert.equal(decideRefresh(facts(revoked(9, { generation: 5 })), ROTATING), "return_current");
  // The interval's last second still counts.
  assert.equal(decideRefresh(facts(revoked(10, { generation: 2 })), ROTATING), "return_current");
  assert.equal(
    decideRefresh(facts(revoked(1, { generation: MAX_GENERATIONS })), ROTATING),
    "return_current",
  );
});

Deno.test("an older token used longer ago than the interval revokes the family", () => {
  // A stolen token replayed late.
  assert.equal(decideRefresh(facts(revoked(10.001, { generation: 2 })), ROTATING), "revoke_family");
  assert.equal(decideRefresh(facts(revoked(3600, { generation: 7 })), ROTATING), "revoke_family");
  const none: RefreshSettings = { rotationEnabled: true, reuseIntervalSec: 0 };
  assert.equal(decideRefresh(facts(revoked(0.001, { generation: 2 })), none), "revoke_family");
});

Deno.test("a used token that leads to no live token revokes the family at any age", () => {
  // Its chain ends revoked or leaves the children it derives (a step-up issued a fresh token),
  // or the live token is further down than any chain is followed.
  assert.equal(decideRefresh(facts(revoked(1, null)), ROTATING), "revoke_family");
  assert.equal(decideRefresh(facts(revoked(3600, null)), ROTATING), "revoke_family");
  assert.equal(
    decideRefresh(facts(revoked(1, { generation: MAX_GENERATIONS + 1 })), ROTATING),
    "revoke_family",
  );
});

Deno.test("how far down the chain is read: any depth within the interval, the child after", () => {
  assert.equal(generationsToRead({ updated_at: ago(10) }, NOW, ROTATING), MAX_GENERATIONS);
  assert.equal(generationsToRead({ updated_at: ago(11) }, NOW, ROTATING), 1);
  assert.equal(generationsToRead({ updated_at: ago(0) }, NOW, ROTATING), MAX_GENERATIONS);
});

Deno.test("a revoked token is refused without touching the family when rotation is off", () => {
  assert.equal(decideRefresh(facts(revoked(1, { generation: 1 })), FIXED), "reused");
  assert.equal(decideRefresh(facts(revoked(3600, null)), FIXED), "reused");
});

/**
 * The refresh rule without a database: each case builds the rows the grant
 * would read and checks the decision. The cases follow GoTrue's
 * `internal/tokens/service_test.go` (RefreshTokenV2Suite: normal use, a
 * failed save answered at any age, concurrent reuse, malicious reuse after
 * the interval) plus ours for bursts of exchanges, bans and expiry.
 */
import assert from "node:assert/strict";
import {
  decideRefresh,
  MAX_GENERATIONS,
  type RefreshFacts,
  type RefreshSettings,
  reuseWindowEnd,
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

/**
 * A token used (revoked) `sec` seconds ago that leads to the live token, `generation` exchanges
 * down and issued `issuedSec` seconds after the token's use; no `generation`: to none.
 */
function revoked(sec: number, generation?: number, issuedSec = 0): Partial<RefreshFacts> {
  const used = ago(sec);
  return {
    token: { revoked: true, updated_at: used },
    current: generation === undefined
      ? null
      : { generation, issued_at: new Date(used.getTime() + issuedSec * 1000) },
  };
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
  // parent, v2's counter one behind): its child was issued the moment it was used.
  assert.equal(decideRefresh(facts(revoked(3, 1)), ROTATING), "return_current");
  assert.equal(decideRefresh(facts(revoked(12.7, 1)), ROTATING), "return_current");
  assert.equal(decideRefresh(facts(revoked(86_400, 1)), ROTATING), "return_current");
  const none: RefreshSettings = { rotationEnabled: true, reuseIntervalSec: 0 };
  assert.equal(decideRefresh(facts(revoked(1, 1)), none), "return_current");
});

Deno.test("an older token used within the reuse interval gets the live token", () => {
  // Two tabs: one refreshed twice while the other's refresh of the first token was on its way.
  assert.equal(decideRefresh(facts(revoked(3, 2, 1.5)), ROTATING), "return_current");
  assert.equal(decideRefresh(facts(revoked(9, 5, 8)), ROTATING), "return_current");
  assert.equal(decideRefresh(facts(revoked(1, MAX_GENERATIONS, 1)), ROTATING), "return_current");
});

Deno.test("an older token superseded in one burst gets the live token at any age", () => {
  // Every exchange after its use came within the interval of it (an app server's answer wrote
  // it back over the newer token a tab stored meanwhile); the browser sends it an hour later.
  assert.equal(decideRefresh(facts(revoked(3600, 3, 2)), ROTATING), "return_current");
  // The interval's last instant still counts.
  assert.equal(decideRefresh(facts(revoked(3600, 2, 10)), ROTATING), "return_current");
});

Deno.test("an older token superseded later than the interval revokes the family", () => {
  // A stolen token replayed after its owner refreshed again, a minute or an hour later.
  assert.equal(decideRefresh(facts(revoked(61, 2, 60)), ROTATING), "revoke_family");
  assert.equal(decideRefresh(facts(revoked(7200, 2, 3600)), ROTATING), "revoke_family");
  assert.equal(decideRefresh(facts(revoked(11, 2, 10.001)), ROTATING), "revoke_family");
  const none: RefreshSettings = { rotationEnabled: true, reuseIntervalSec: 0 };
  assert.equal(decideRefresh(facts(revoked(1, 2, 0.001)), none), "revoke_family");
});

Deno.test("a used token that leads to no live token revokes the family at any age", () => {
  // Its chain ends revoked or leaves the children it derives (a step-up issued a fresh token),
  // or the live token is further down than any chain is followed.
  assert.equal(decideRefresh(facts(revoked(1)), ROTATING), "revoke_family");
  assert.equal(decideRefresh(facts(revoked(3600)), ROTATING), "revoke_family");
  assert.equal(
    decideRefresh(facts(revoked(1, MAX_GENERATIONS + 1, 1)), ROTATING),
    "revoke_family",
  );
});

Deno.test("the chain is read up to the interval after the token's use", () => {
  const used = ago(3600);
  assert.equal(
    reuseWindowEnd({ updated_at: used }, ROTATING).getTime(),
    used.getTime() + 10_000,
  );
});

Deno.test("a revoked token is refused without touching the family when rotation is off", () => {
  assert.equal(decideRefresh(facts(revoked(1, 1)), FIXED), "reused");
  assert.equal(decideRefresh(facts(revoked(3600)), FIXED), "reused");
});

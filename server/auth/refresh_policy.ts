/**
 * The refresh_token grant's rule, as a pure function of what the database
 * holds: given the presented token's row, its session, its user, the token's
 * newest child and the settings, what happens. Sessions.refresh reads the
 * rows (under the session's lock), asks this function, and carries the
 * answer out through the store; nothing here touches the database or a clock.
 *
 * The rule (GoTrue's `internal/api/token_refresh.go`, with the reuse interval
 * of `GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL`):
 * - an unknown token, or one whose session or user is gone: `not_found`;
 * - a banned user: `banned`; a session past its `not_after`: `expired`;
 * - rotation off: a live token is answered with itself (`keep`), a revoked
 *   one is refused without touching the family (`reused`);
 * - rotation on, live token: `rotate` (revoke it, hand out its child);
 * - rotation on, revoked token: when its newest child is live, is the one
 *   this token derives, and the token was revoked at most the reuse interval
 *   ago, the same child is handed out again (`return_child`: concurrent
 *   refreshes of one token all get one answer); otherwise the token was
 *   stolen or replayed late, and the whole family is revoked
 *   (`revoke_family`).
 */
import type { RefreshTokenRow } from "../store/refresh_tokens.ts";
import type { SessionRow } from "../store/sessions.ts";

/** What the refresh rule reads from the database. */
export interface RefreshFacts {
  /** The presented token's row, or null when its hash is unknown. */
  token: Pick<RefreshTokenRow, "revoked" | "updated_at"> | null;
  /** The token's session, or null when it ended. */
  session: Pick<SessionRow, "not_after"> | null;
  /** The token's user, or null when deleted. */
  user: { banned_until: Date | string | null } | null;
  /** The newest child of the token (read when the token is revoked and rotation is on). */
  child: Pick<RefreshTokenRow, "revoked" | "token_hash"> | null;
  /** SHA-256 (hex) of the child the presented token derives (rotation on). */
  derivedChildHash: string | null;
  now: Date;
}

/** The settings the rule depends on. */
export interface RefreshSettings {
  /** GOTRUE_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED. */
  rotationEnabled: boolean;
  /** GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL, seconds. */
  reuseIntervalSec: number;
}

/** What the refresh grant does with a presented token. */
export type RefreshDecision =
  /** Unknown token, or its session or user is gone. */
  | "not_found"
  /** The user is banned. */
  | "banned"
  /** The session is past its `not_after`. */
  | "expired"
  /** Live token, rotation on: revoke it and hand out its child. */
  | "rotate"
  /** Live token, rotation off: answer with the same token. */
  | "keep"
  /** Revoked within the reuse interval, its current child live: hand out that child again. */
  | "return_child"
  /** Reuse of an older token or outside the interval: revoke the family, end the session. */
  | "revoke_family"
  /** Rotation off, token revoked: refuse, the family stays. */
  | "reused";

const at = (d: Date | string) => (d instanceof Date ? d : new Date(d)).getTime();

/** Decides what the refresh grant does; see the rule at the top of this file. */
export function decideRefresh(f: RefreshFacts, settings: RefreshSettings): RefreshDecision {
  if (!f.token || !f.session || !f.user) return "not_found";
  const now = f.now.getTime();
  if (f.user.banned_until && at(f.user.banned_until) > now) return "banned";
  if (f.session.not_after && at(f.session.not_after) <= now) return "expired";
  if (!settings.rotationEnabled) return f.token.revoked ? "reused" : "keep";
  if (!f.token.revoked) return "rotate";
  const sameChild = f.child !== null && !f.child.revoked && f.derivedChildHash !== null &&
    f.child.token_hash === f.derivedChildHash;
  const ageSec = (now - at(f.token.updated_at)) / 1000;
  return sameChild && ageSec <= settings.reuseIntervalSec ? "return_child" : "revoke_family";
}

/**
 * The refresh_token grant's rule, as a pure function of what the database
 * holds: given the presented token's row, its session, its user, the live
 * token it leads to and the settings, what happens. Sessions.refresh reads
 * the rows (under the session's lock), asks this function, and carries the
 * answer out through the store; nothing here touches the database or a clock.
 *
 * The rule (GoTrue's `internal/tokens/service.go` RefreshTokenGrant, both its
 * parent check and its v2 refresh-token algorithm, with the reuse interval of
 * `GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL`; docs/sessions.md draws it):
 * - an unknown token, or one whose session or user is gone: `not_found`;
 * - a banned user: `banned`; a session past its `not_after`: `expired`;
 * - rotation off: a live token is answered with itself (`keep`), a revoked
 *   one is refused without touching the family (`reused`);
 * - rotation on, live token: `rotate` (revoke it, hand out its child);
 * - rotation on, revoked token that leads to the session's live token (each
 *   token after it the child its predecessor derives):
 *   - the live token is its own child: the client never saw that child (the
 *     answer was lost, or a tab wrote an older session over a newer one), so
 *     the live token is handed out again at any age (`return_current`);
 *   - the live token is further down: the token was used at most the reuse
 *     interval ago (tabs and servers refreshing at once, one of them on a
 *     slower link) and gets the live token (`return_current`), or longer ago
 *     and the family is revoked (`revoke_family`): an old token replayed late
 *     is what a thief holds;
 * - rotation on, revoked token that leads to no live token (the chain was cut
 *   by a step-up or ends revoked): `revoke_family`.
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
  /**
   * The session's live token, when the presented (revoked) token leads to it through children
   * each derived from the one before, and how many exchanges down it is (1: the token's own
   * child); null when there is none (read when the token is revoked and rotation is on).
   */
  current: { generation: number } | null;
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
  /** Revoked, and the session's live token is its child or was reached within the interval. */
  | "return_current"
  /** Reuse of an older token outside the interval, or of one that leads nowhere. */
  | "revoke_family"
  /** Rotation off, token revoked: refuse, the family stays. */
  | "reused";

const at = (d: Date | string) => (d instanceof Date ? d : new Date(d)).getTime();

/**
 * The most exchanges a chain is followed within the reuse interval: a bound on the work one
 * request can cause, far beyond what clients make in seconds (each exchange is a request under
 * the token rate limit). A live token further down counts as none.
 */
export const MAX_GENERATIONS = 1000;

/**
 * How far down the chain the live token may be for `token`'s reuse to be answered: up to
 * MAX_GENERATIONS while the token was used at most the reuse interval ago, one (its own child)
 * after. Sessions.refresh reads the chain no further than this.
 */
export function generationsToRead(
  token: Pick<RefreshTokenRow, "updated_at">,
  now: Date,
  settings: RefreshSettings,
): number {
  return withinInterval(token, now, settings) ? MAX_GENERATIONS : 1;
}

function withinInterval(
  token: Pick<RefreshTokenRow, "updated_at">,
  now: Date,
  settings: RefreshSettings,
): boolean {
  return (now.getTime() - at(token.updated_at)) / 1000 <= settings.reuseIntervalSec;
}

/** Decides what the refresh grant does; see the rule at the top of this file. */
export function decideRefresh(f: RefreshFacts, settings: RefreshSettings): RefreshDecision {
  if (!f.token || !f.session || !f.user) return "not_found";
  const now = f.now.getTime();
  if (f.user.banned_until && at(f.user.banned_until) > now) return "banned";
  if (f.session.not_after && at(f.session.not_after) <= now) return "expired";
  if (!settings.rotationEnabled) return f.token.revoked ? "reused" : "keep";
  if (!f.token.revoked) return "rotate";
  const reach = generationsToRead(f.token, f.now, settings);
  return f.current !== null && f.current.generation <= reach ? "return_current" : "revoke_family";
}

/**
 * The refresh_token grant's rule, as a pure function of what the database
 * holds: given the presented token's row, its session, its user, the live
 * token it leads to and the settings, what happens. Sessions.refresh reads
 * the rows (under the session's lock), asks this function, and carries the
 * answer out through the store; nothing here touches the database or a clock.
 *
 * The rule (docs/sessions.md, "Refresh-token reuse", draws it), with the
 * reuse interval of `GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL`:
 * - an unknown token, or one whose session or user is gone: `not_found`;
 * - a banned user: `banned`; a session past its `not_after`: `expired`;
 * - rotation off: a live token is answered with itself (`keep`), a revoked
 *   one is refused without touching the family (`reused`);
 * - rotation on, live token: `rotate` (revoke it, hand out its child);
 * - rotation on, revoked (used) token that leads to the session's live token
 *   (each token after it the child its predecessor derives), the live token
 *   issued at most the reuse interval after the used token's own use: the
 *   live token is handed out again, at any age (`return_current`). This holds
 *   GoTrue's two cases (`internal/tokens/service.go`, the parent check and
 *   the counter of its v2 refresh-token algorithm): the live token's parent,
 *   whose client never saw its child, at any age (its child was issued at
 *   the moment of its use), and any used token within the interval of its
 *   use (tabs and servers refreshing at once). It also holds a token that was
 *   superseded in one burst of exchanges, all within the interval of its use,
 *   presented later: what a browser holds after an app server's answer wrote
 *   an older cookie over the newer one a tab stored meanwhile;
 * - any other used token, or one that leads to no live token (the chain was
 *   cut by a step-up or ends revoked), revokes the family (`revoke_family`):
 *   a token from before the last burst, replayed, is what a thief holds.
 */
import { isBanned } from "./ban.ts";
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
   * each derived from the one before: when it was issued, and how many exchanges down it is
   * (1: the token's own child); null when there is none (read when the token is revoked and
   * rotation is on).
   */
  current: { issued_at: Date | string; generation: number } | null;
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
  /** Revoked, and the live token was issued within the interval of its use: hand that out. */
  | "return_current"
  /** Reuse of a token superseded later than that, or of one that leads nowhere. */
  | "revoke_family"
  /** Rotation off, token revoked: refuse, the family stays. */
  | "reused";

const at = (d: Date | string) => (d instanceof Date ? d : new Date(d)).getTime();

/**
 * The most exchanges a chain is followed: a bound on the work one request can cause, far
 * beyond what clients make within a reuse interval (each exchange is a request under the token
 * rate limit). A live token further down counts as none.
 */
export const MAX_GENERATIONS = 1000;

/**
 * The latest time a live token may have been issued for a reuse of `token` to be answered:
 * the reuse interval after its use. Sessions.refresh reads the chain no further than this.
 */
export function reuseWindowEnd(
  token: Pick<RefreshTokenRow, "updated_at">,
  settings: RefreshSettings,
): Date {
  return new Date(at(token.updated_at) + settings.reuseIntervalSec * 1000);
}

/** Decides what the refresh grant does; see the rule at the top of this file. */
export function decideRefresh(f: RefreshFacts, settings: RefreshSettings): RefreshDecision {
  if (!f.token || !f.session || !f.user) return "not_found";
  const now = f.now.getTime();
  if (isBanned(f.user, f.now)) return "banned";
  if (f.session.not_after && at(f.session.not_after) <= now) return "expired";
  if (!settings.rotationEnabled) return f.token.revoked ? "reused" : "keep";
  if (!f.token.revoked) return "rotate";
  const c = f.current;
  return c !== null && c.generation <= MAX_GENERATIONS &&
      at(c.issued_at) <= reuseWindowEnd(f.token, settings).getTime()
    ? "return_current"
    : "revoke_family";
}

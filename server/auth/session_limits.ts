/**
 * Session limits, as GoTrue's `SESSIONS_*` settings define them, decided by
 * pure functions so the refresh path (auth/sessions.ts) only asks and answers:
 *
 * - timebox: a session ends this long after it began, however active;
 * - inactivity timeout: a session ends when it was not refreshed for this long;
 * - single session per user: only the user's most recently active session
 *   may refresh; an older one is ended by the newer sign-in.
 *
 * A refused refresh answers 400 `session_expired` with GoTrue's messages.
 */
import type { Config } from "../config/mod.ts";

/** Why a session can no longer be refreshed, or "valid". */
export type SessionValidity = "valid" | "past_not_after" | "past_timebox" | "timed_out";

/** The session columns the limits read. */
export interface LimitedSession {
  id: string;
  created_at: Date;
  refreshed_at: Date | null;
  not_after: Date | null;
}

/**
 * When the session was last active: its last refresh, else the time of the
 * refresh token being used (when later than the start), else its start.
 */
export function lastRefreshedAt(s: LimitedSession, refreshTokenTime?: Date | null): Date {
  if (s.refreshed_at) return new Date(s.refreshed_at);
  const created = new Date(s.created_at);
  if (refreshTokenTime && new Date(refreshTokenTime) > created) return new Date(refreshTokenTime);
  return created;
}

/**
 * The validity of `s` at `now` under the configured limits (0 seconds: no
 * limit). `refreshTokenTime` is the update time of the refresh token
 * presented, when there is one.
 */
export function sessionValidity(
  limits: Config["sessions"],
  s: LimitedSession,
  now: Date,
  refreshTokenTime?: Date | null,
): SessionValidity {
  const t = now.getTime();
  if (s.not_after && t > new Date(s.not_after).getTime()) return "past_not_after";
  if (limits.timeboxSec > 0 && t > new Date(s.created_at).getTime() + limits.timeboxSec * 1000) {
    return "past_timebox";
  }
  if (
    limits.inactivityTimeoutSec > 0 &&
    t > lastRefreshedAt(s, refreshTokenTime).getTime() + limits.inactivityTimeoutSec * 1000
  ) {
    return "timed_out";
  }
  return "valid";
}

/**
 * With SESSIONS_SINGLE_PER_USER: true when another still valid session of the
 * same user was active more recently than `current`, which a newer sign-in
 * has thereby superseded.
 */
export function supersededByNewerSession(
  limits: Config["sessions"],
  current: LimitedSession,
  others: LimitedSession[],
  now: Date,
  refreshTokenTime?: Date | null,
): boolean {
  const mine = lastRefreshedAt(current, refreshTokenTime).getTime();
  return others.some((o) =>
    o.id !== current.id && sessionValidity(limits, o, now) === "valid" &&
    lastRefreshedAt(o).getTime() > mine
  );
}

/** GoTrue's message of a refresh refused by a session limit. */
export function sessionExpiredMessage(why: SessionValidity | "superseded"): string {
  switch (why) {
    case "timed_out":
      return "Invalid Refresh Token: Session Expired (Inactivity)";
    case "superseded":
      return "Invalid Refresh Token: Session Expired (Revoked by Newer Login)";
    default:
      return "Invalid Refresh Token: Session Expired";
  }
}

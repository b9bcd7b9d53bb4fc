/**
 * The one admin check: who may act as an administrator. Every route that
 * accepts an admin role asks it (the `/admin/*` endpoints, POST /invite,
 * and the captcha's admin skip, security/middleware.ts), so a token opens
 * all of them or none.
 *
 * A token is an admin's when its `role` is in JWT_ADMIN_ROLES. A token
 * without a session (a `service_role` key) is then enough. A token bound to
 * a session (an operator who signed in: a user whose role is an admin role,
 * the designed way into the console) must also still be what GoTrue's
 * requireAdminCredentials (internal/api/middleware.go) asks of it:
 *
 * 1. its user exists and is not banned, its session exists (not signed out,
 *    not ended by a ban or a password change) and is within the session
 *    limits (SESSIONS_TIMEBOX, SESSIONS_INACTIVITY_TIMEOUT, `not_after`);
 * 2. stricter than GoTrue: once the operator has a verified MFA factor, the
 *    session is aal2. A phished password (an aal1 sign-in) then opens no
 *    admin route, which would otherwise sign in as anyone through
 *    `POST /admin/generate_link`.
 *
 * The role is checked first, so a user's ordinary token costs no lookup.
 */
import type { Config } from "../config/mod.ts";
import type { Clock } from "./clock.ts";
import { AuthError } from "./errors.ts";
import type { AccessClaims, JwtService } from "./jwt.ts";
import type { Mfa } from "./mfa.ts";
import { sessionValidity } from "./session_limits.ts";
import { refuseBanned } from "./ban.ts";
import type { Sessions } from "./sessions.ts";
import type { Users } from "./users.ts";
import { isUuid } from "../util/uuid.ts";

const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** The message of an operator's aal1 token on an admin route. */
export const ADMIN_AAL2_MESSAGE =
  "AAL2 session is required to use the admin API when MFA is enabled.";

/** What the admin check reads. */
export interface AdminAccessDeps {
  config: Config;
  clock: Clock;
  jwt: Pick<JwtService, "verify">;
  users: Pick<Users, "findById">;
  sessions: Pick<Sessions, "findSession">;
  mfa: Pick<Mfa, "hasVerifiedFactor">;
}

/**
 * The verified claims of `token` when it may act as an admin (see the
 * module's comment).
 *
 * @throws {AuthError} bad_jwt (a token that does not verify), not_admin,
 *   user_not_found, user_banned, session_not_found, session_expired,
 *   insufficient_aal
 */
export async function adminClaims(s: AdminAccessDeps, token: string): Promise<AccessClaims> {
  const claims = await s.jwt.verify(token);
  const role = typeof claims.role === "string" ? claims.role : "";
  if (!s.config.jwt.adminRoles.includes(role)) {
    throw new AuthError("not_admin", "User not allowed");
  }
  const sid = typeof claims.session_id === "string" ? claims.session_id : "";
  if (!sid || sid === NIL_UUID) return claims;
  if (!isUuid(claims.sub)) {
    throw new AuthError("bad_jwt", "invalid claim: sub claim must be a UUID", {
      situation: "admin_token",
    });
  }
  const user = await s.users.findById(claims.sub);
  if (!user) {
    throw new AuthError("user_not_found", "User from sub claim in JWT does not exist", {
      situation: "admin_token",
    });
  }
  const now = s.clock.now();
  refuseBanned(user, now);
  const session = isUuid(sid) ? await s.sessions.findSession(sid) : null;
  if (!session || session.user_id !== user.id) {
    throw new AuthError("session_not_found", "Session from session_id claim in JWT does not exist");
  }
  if (sessionValidity(s.config.sessions, session, now) !== "valid") {
    throw new AuthError("session_expired", "Session is no longer valid", {
      situation: "admin_token",
    });
  }
  if (session.aal !== "aal2" && await s.mfa.hasVerifiedFactor(user.id)) {
    throw new AuthError("insufficient_aal", ADMIN_AAL2_MESSAGE);
  }
  return claims;
}

/** Whether `token` passes {@link adminClaims}: the captcha's admin skip. */
export async function isAdminToken(s: AdminAccessDeps, token: string): Promise<boolean> {
  try {
    await adminClaims(s, token);
    return true;
  } catch (e) {
    if (e instanceof AuthError) return false;
    throw e;
  }
}

/**
 * The hono environment of this server and the per-request helpers every
 * endpoint group uses: the caller's identity from the bearer token, the admin
 * check, and the client IP.
 */
import type { Context } from "../../deps.ts";
import type { AccessClaims } from "../auth/jwt.ts";
import { bannedError, isBanned, type SessionRow } from "../auth/sessions.ts";
import type { UserRow } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { ApiError } from "./errors.ts";
import { isUuid } from "./input.ts";
import { sessionValidity } from "../auth/session_limits.ts";

const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** Hono bindings and variables of this app. */
export type AppEnv = {
  Bindings: {
    remoteAddr?: string;
    /**
     * Roles the password grant may open a session for; set by the console's sign-in
     * (console/routes.ts), which is refused before a session or a sign-in is counted.
     */
    signInRoles?: readonly string[];
  };
  Variables: {
    services: Services;
    requestId: string;
    clientIp: string;
    /** Set by the `user` middleware of a route (guards.ts). */
    caller?: Caller;
    /** Set by the `jwt`, `admin` and `serviceOrAdmin` middleware of a route (guards.ts). */
    claims?: AccessClaims;
  };
};

/** The context type handlers receive. */
export type Ctx = Context<AppEnv>;

/** The authenticated caller. */
export interface Caller {
  claims: AccessClaims;
  user: UserRow;
  session: SessionRow | null;
  token: string;
}

/** The bearer token of the request, or a 401 no_authorization. */
export function bearerToken(c: Ctx): string {
  return bearerOf(c.req.header("authorization"));
}

/** The bearer token of an Authorization header, or a 401 no_authorization. */
export function bearerOf(authorization: string | null | undefined): string {
  const m = /^bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!m) throw new ApiError(401, "no_authorization", "This endpoint requires a Bearer token");
  return m[1];
}

/**
 * Verifies the bearer token and loads its user and session. A token whose
 * session has ended (sign-out, reuse detection) is refused with
 * session_not_found, as GoTrue does.
 */
export async function requireUser(c: Ctx): Promise<Caller> {
  const s = c.get("services");
  const token = bearerToken(c);
  const claims = await verifiedClaims(c, token);
  const user = await s.users.findById(claims.sub);
  if (!user) throw new ApiError(403, "user_not_found", "User from sub claim in JWT does not exist");
  // A banned user's tokens open nothing, also one issued before the ban (GoTrue's
  // requireAuthentication); the ban ended their sessions too (admin.ts).
  if (isBanned(user, s.clock.now())) throw bannedError();
  let session: SessionRow | null = null;
  if (typeof claims.session_id === "string" && claims.session_id) {
    session = isUuid(claims.session_id) ? await s.sessions.findSession(claims.session_id) : null;
    if (!session) {
      throw new ApiError(
        403,
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
  }
  return { claims, user, session, token };
}

/** The verified claims of `token`, with a UUID `sub` (403 bad_jwt otherwise). */
export function verifiedClaims(c: Ctx, token: string): Promise<AccessClaims> {
  return verifiedClaimsOf(c.get("services"), token);
}

/** The verified claims of `token` for server `s`, with a UUID `sub` (403 bad_jwt otherwise). */
export async function verifiedClaimsOf(s: Services, token: string): Promise<AccessClaims> {
  const claims = await s.jwt.verify(token);
  if (!isUuid(claims.sub)) { // a non-UUID sub made the user lookup a 500 (tests/reliability)
    throw new ApiError(403, "bad_jwt", "invalid claim: sub claim must be a UUID");
  }
  return claims;
}

/**
 * Verifies the bearer token and that its role claim is an admin role
 * (JWT_ADMIN_ROLES). An admin token bound to a session (a `session_id`
 * claim) opens nothing once that session has ended or is past a session
 * limit (SESSIONS_TIMEBOX, SESSIONS_INACTIVITY_TIMEOUT, the session's
 * not_after): 403 session_not_found / session_expired, as GoTrue's
 * requireAdminCredentials (internal/api/middleware.go) does. Sessionless
 * tokens (service_role) are not affected.
 */
export async function requireAdmin(c: Ctx): Promise<AccessClaims> {
  const s = c.get("services");
  const claims = await s.jwt.verify(bearerToken(c));
  const sid = typeof claims.session_id === "string" ? claims.session_id : "";
  if (sid && sid !== NIL_UUID) {
    if (!isUuid(claims.sub)) {
      throw new ApiError(400, "bad_jwt", "invalid claim: sub claim must be a UUID");
    }
    const user = await s.users.findById(claims.sub);
    if (!user) {
      throw new ApiError(403, "user_not_found", "User from sub claim in JWT does not exist");
    }
    const session = isUuid(sid) ? await s.sessions.findSession(sid) : null;
    if (!session) {
      throw new ApiError(
        403,
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
    if (sessionValidity(s.config.sessions, session, s.clock.now()) !== "valid") {
      throw new ApiError(403, "session_expired", "Session is no longer valid");
    }
  }
  const role = typeof claims.role === "string" ? claims.role : "";
  if (!s.config.jwt.adminRoles.includes(role)) {
    throw new ApiError(403, "not_admin", "User not allowed");
  }
  return claims;
}

/** The caller the route's `user` middleware loaded (routes.ts). */
export function callerOf(c: Ctx): Caller {
  const caller = c.get("caller");
  if (!caller) throw new Error(`${c.req.method} ${c.req.path}: the route has no user middleware`);
  return caller;
}

/** The verified claims the route's `jwt`, `admin` or `serviceOrAdmin` middleware read. */
export function claimsOf(c: Ctx): AccessClaims {
  const claims = c.get("claims");
  if (!claims) throw new Error(`${c.req.method} ${c.req.path}: the route has no token middleware`);
  return claims;
}

/** The client IP as computed for this request (socket, or the trusted forwarded header). */
export function clientIp(c: Ctx): string {
  return c.get("clientIp") ?? "";
}

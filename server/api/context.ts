/**
 * The hono environment of this server and the per-request helpers every
 * endpoint group uses: the caller's identity from the bearer token, the admin
 * check, and the client IP.
 */
import type { Context } from "../../deps.ts";
import { adminClaims } from "../auth/admin_access.ts";
import type { AccessClaims } from "../auth/jwt.ts";
import { refuseBanned } from "../auth/ban.ts";
import type { SessionRow } from "../auth/sessions.ts";
import type { UserRow } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { ApiError } from "./errors.ts";
import { isUuid } from "./input.ts";

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
    /** Set by the `jwt` and `admin` middleware of a route (guards.ts). */
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
  const token = bearerIn(authorization);
  if (!token) throw new ApiError(401, "no_authorization", "This endpoint requires a Bearer token");
  return token;
}

/** The bearer token of an Authorization header, or null when it has none. */
export function bearerIn(authorization: string | null | undefined): string | null {
  return /^bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1] ?? null;
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
  refuseBanned(user, s.clock.now());
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
 * The bearer token's claims when it may act as an admin: the one admin
 * check of every route that accepts an admin role (auth/admin_access.ts).
 */
export async function requireAdmin(c: Ctx): Promise<AccessClaims> {
  return await adminClaims(c.get("services"), bearerToken(c));
}

/** The caller the route's `user` middleware loaded (routes.ts). */
export function callerOf(c: Ctx): Caller {
  const caller = c.get("caller");
  if (!caller) throw new Error(`${c.req.method} ${c.req.path}: the route has no user middleware`);
  return caller;
}

/** The verified claims the route's `jwt` or `admin` middleware read. */
export function claimsOf(c: Ctx): AccessClaims {
  const claims = c.get("claims");
  if (!claims) throw new Error(`${c.req.method} ${c.req.path}: the route has no token middleware`);
  return claims;
}

/** The client IP as computed for this request (socket, or the trusted forwarded header). */
export function clientIp(c: Ctx): string {
  return c.get("clientIp") ?? "";
}

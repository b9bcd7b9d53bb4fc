/**
 * Who may call a route: the authentication and assurance middleware that
 * routes.ts names per row, as GoTrue's requireAuthentication,
 * requireAdminCredentials, requireNotAnonymous and the aal checks of
 * internal/api/user.go. Each
 * puts what it verified into the context, where handlers read it with
 * `callerOf(c)` or `claimsOf(c)` (context.ts). The decisions are the
 * domain's (auth/admin_access.ts, auth/assurance.ts).
 */
import type { MiddlewareHandler } from "../../deps.ts";
import { requireAal2IfMfa, requireLinkingAllowed } from "../auth/assurance.ts";
import {
  type AppEnv,
  bearerToken,
  type Caller,
  callerOf,
  requireAdmin,
  requireUser,
  verifiedClaims,
} from "./context.ts";
import { ApiError } from "./errors.ts";
import { type Body, readBody } from "./input.ts";

/** A middleware of the route table. */
export type Guard = MiddlewareHandler<AppEnv>;

/**
 * A bearer token of an existing user whose session (when the token names
 * one) still exists; 401 no_authorization, 403 bad_jwt, user_not_found,
 * session_not_found, user_banned otherwise.
 */
export const user: Guard = async (c, next) => {
  c.set("caller", await requireUser(c));
  await next();
};

/**
 * A verified bearer token with a UUID `sub`, nothing more: the handler
 * checks the user and the session itself (GET /user reads them in the same
 * statement as the answer, user_profile.ts).
 */
export const jwt: Guard = async (c, next) => {
  c.set("claims", await verifiedClaims(c, bearerToken(c)));
  await next();
};

/**
 * The one admin check (auth/admin_access.ts) of every route that accepts an
 * admin role: a role in JWT_ADMIN_ROLES; for a token bound to a session,
 * that session alive and aal2 once the operator has a verified factor.
 */
export const admin: Guard = async (c, next) => {
  c.set("claims", await requireAdmin(c));
  await next();
};

/**
 * After `user`: an anonymous user may not manage MFA factors (403
 * no_authorization, GoTrue's requireNotAnonymous on /factors): an account
 * nobody can sign in to again has nothing a second factor would protect.
 */
export const notAnonymous: Guard = async (c, next) => {
  if (callerOf(c).user.is_anonymous) {
    throw new ApiError(
      403,
      "no_authorization",
      "Anonymous user not allowed to perform these actions",
    );
  }
  await next();
};

/**
 * After `user`: linking and unlinking identities need
 * SECURITY_MANUAL_LINKING_ENABLED (else 404 manual_linking_disabled) and,
 * once the user has a verified factor, an aal2 session (401
 * insufficient_aal): the gates every road to a link passes, the id_token
 * grant's `link_identity` too (auth/assurance.ts).
 */
export const linking: Guard = async (c, next) => {
  await requireLinkingAllowed(c.get("services"), callerOf(c));
  await next();
};

/**
 * After `user`: once the user has a verified MFA factor, an aal2 session
 * (401 insufficient_aal with `message`), for every request or, with `when`,
 * for those whose body `when` picks (PUT /user: only credential changes).
 */
export function aal2(
  message: string,
  when?: (caller: Caller, body: Body) => boolean,
): Guard {
  return async (c, next) => {
    const caller = callerOf(c);
    if (!when || when(caller, await readBody(c))) {
      await requireAal2IfMfa(c.get("services").mfa, caller, message);
    }
    await next();
  };
}

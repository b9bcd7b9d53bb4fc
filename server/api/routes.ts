/**
 * Every endpoint of the server, one row each, as GoTrue's
 * internal/api/api.go: the method, the path, the middleware that runs before
 * the handler (in the order written) and the handler. Adding an endpoint is
 * adding a row; changing who may call it or how often is changing its
 * middleware here.
 *
 * Middleware of a row:
 * - `limit(name)`: counts the request against a per-client request limit
 *   (security/rate_limit.ts: RATE_LIMIT_*), 429 over_request_rate_limit.
 *   `limitAnonymous` counts a POST /signup without email and phone as an
 *   anonymous sign-up too.
 * - `captcha()`: with SECURITY_CAPTCHA_ENABLED the body's captcha token must
 *   pass (security/captcha.ts); `captcha(passwordGrant)` only for the
 *   password grant of POST /token. An admin caller skips it.
 * - `user`: a bearer token of an existing user and session; the handler reads
 *   it with `callerOf(c)`. `jwt`: only a verified token (`claimsOf(c)`); GET
 *   /user checks the user and the session in the statement that reads them.
 *   `admin`: the one admin check of every route that accepts an admin
 *   role (auth/admin_access.ts): a role in JWT_ADMIN_ROLES, and for a token
 *   bound to a session, that session alive and aal2 once the operator has a
 *   verified factor.
 * - `notAnonymous`: after `user`, not an anonymous user (403 no_authorization).
 * - `linking`: after `user`, SECURITY_MANUAL_LINKING_ENABLED (else 404) and an
 *   aal2 session once the user has a verified factor (auth/assurance.ts; the
 *   id_token grant's `link_identity` passes the same gates).
 * - `aal2(message[, when])`: after `user`, an aal2 session once the user has
 *   a verified MFA factor (401 insufficient_aal).
 *
 * Each row is compiled once, at start, into the one function that answers it
 * (api/road.ts): the request id and observers, the body-size limit and the
 * query check, the row's middleware, the handler, CORS. A HEAD request is
 * answered by the GET row without a body (hono), and counts against no
 * limit. A method or path without a row is 404 not_found, and an OPTIONS
 * preflight to any path is answered (api/cors.ts). The operators' console
 * (CONSOLE_ENABLED) mounts its own routes under /console/ on the same road
 * (console/routes.ts), with its own session cookie and headers.
 */
import type { Hono } from "../../deps.ts";
import type { Services } from "../services.ts";
import { captcha, limit, limitAnonymous, passwordGrant } from "../security/middleware.ts";
import { AAL2_UPDATE_MESSAGE, changesCredentials } from "./aal.ts";
import type { AppEnv, Ctx } from "./context.ts";
import type { Road } from "./road.ts";
import { aal2, admin, type Guard, jwt, linking, notAnonymous, user } from "./guards.ts";
import {
  adminCreateUser,
  adminDeleteUser,
  adminGetUser,
  adminListUsers,
  adminUpdateUser,
  adminUpsertUser,
} from "./admin.ts";
import { adminEndSessions, adminListSessions } from "./admin_sessions.ts";
import { auditLog } from "./audit.ts";
import { authorize, callback, continueLink, startLink, unlink } from "./external.ts";
import {
  adminDeleteFactor,
  adminListFactors,
  adminUpdateFactor,
  challengeFactor,
  enrollFactor,
  unenrollFactor,
  verifyFactor,
} from "./factors.ts";
import { generateLink } from "./generate_link.ts";
import { health, jwks, settings } from "./health.ts";
import { invite } from "./invite.ts";
import { logout } from "./logout.ts";
import { magiclink } from "./magiclink.ts";
import { otp } from "./otp.ts";
import { reauthenticate } from "./reauthenticate.ts";
import { recover } from "./recover.ts";
import { resend } from "./resend.ts";
import { samlDisabled } from "./saml.ts";
import { signup } from "./signup.ts";
import { token } from "./token.ts";
import { updateUser } from "./user.ts";
import { userProfileResponse } from "./user_profile.ts";
import { verifyGet, verifyPost } from "./verify.ts";

/** The methods of the table. */
export type Method = "GET" | "POST" | "PUT" | "DELETE";

/** A handler: the request's context and the server's services in, the answer out. */
export type Handler = (c: Ctx, s: Services) => Response | Promise<Response>;

/** One row: method, path, middleware in the order it runs, handler. */
export type Route = readonly [Method, string, readonly Guard[], Handler];

/** Every endpoint of the server. */
// deno-fmt-ignore
export const ROUTES: readonly Route[] = [
  // method  path                                     middleware                                  handler
  ["GET",    "/health",                               [],                                         health],
  ["GET",    "/.well-known/jwks.json",                [],                                         jwks],
  ["GET",    "/settings",                             [],                                         settings],

  ["GET",    "/authorize",                            [],                                         authorize],
  ["GET",    "/callback",                             [],                                         callback],
  ["POST",   "/callback",                             [],                                         callback],

  ["POST",   "/signup",                               [limit("signup"), limitAnonymous, captcha()], signup],
  ["POST",   "/token",                                [limit("token"), captcha(passwordGrant)],   token],
  ["GET",    "/verify",                               [limit("verify")],                          verifyGet],
  ["POST",   "/verify",                               [limit("verify")],                          verifyPost],
  ["POST",   "/otp",                                  [limit("otp"), captcha()],                  otp],
  ["POST",   "/magiclink",                            [limit("otp"), captcha()],                  magiclink],
  ["POST",   "/recover",                              [captcha()],                                recover],
  ["POST",   "/resend",                               [captcha()],                                resend],
  ["POST",   "/invite",                               [admin],                                    invite],

  ["POST",   "/logout",                               [user],                                     logout],
  ["GET",    "/reauthenticate",                       [user],                                     reauthenticate],
  ["GET",    "/user",                                 [jwt],                                      userProfileResponse],
  ["PUT",    "/user",                                 [user, aal2(AAL2_UPDATE_MESSAGE, changesCredentials)], updateUser],
  ["GET",    "/user/identities/authorize",            [user, linking],                            startLink],
  ["GET",    "/user/identities/authorize/continue",   [],                                         continueLink],
  ["DELETE", "/user/identities/:identity_id",         [user, linking],                            unlink],

  ["POST",   "/factors",                              [user, notAnonymous],                       enrollFactor],
  ["POST",   "/factors/:factor_id/challenge",         [user, notAnonymous],                       challengeFactor],
  ["POST",   "/factors/:factor_id/verify",            [user, notAnonymous],                       verifyFactor],
  ["DELETE", "/factors/:factor_id",                   [user, notAnonymous],                       unenrollFactor],

  ["GET",    "/admin/audit",                          [admin],                                    auditLog],
  ["GET",    "/admin/users",                          [admin],                                    adminListUsers],
  ["POST",   "/admin/users",                          [admin],                                    adminCreateUser],
  ["GET",    "/admin/users/:user_id",                 [admin],                                    adminGetUser],
  ["PUT",    "/admin/users/:user_id",                 [admin],                                    adminUpdateUser],
  ["POST",   "/admin/users/:user_id",                 [admin],                                    adminUpsertUser],
  ["DELETE", "/admin/users/:user_id",                 [admin],                                    adminDeleteUser],
  ["GET",    "/admin/users/:user_id/factors",         [admin],                                    adminListFactors],
  ["PUT",    "/admin/users/:user_id/factors/:factor_id", [admin],                                 adminUpdateFactor],
  ["DELETE", "/admin/users/:user_id/factors/:factor_id", [admin],                                 adminDeleteFactor],
  ["GET",    "/admin/users/:user_id/sessions",        [admin],                                    adminListSessions],
  ["DELETE", "/admin/users/:user_id/sessions",        [admin],                                    adminEndSessions],
  ["POST",   "/admin/generate_link",                  [admin],                                    generateLink],

  // SAML SSO is not built: 404 saml_provider_disabled, as GoTrue with it off
  ["POST",   "/sso",                                  [],                                         samlDisabled],
  ["GET",    "/sso/saml/metadata",                    [],                                         samlDisabled],
  ["POST",   "/sso/saml/acs",                         [],                                         samlDisabled],
];

/**
 * Adds every row of `routes` (ROUTES; a test passes its own) to `app`, each as the one
 * function the road compiles from it: hono's router picks it, and nothing else runs.
 */
export function registerRoutes(app: Hono<AppEnv>, road: Road, routes = ROUTES): void {
  for (const [method, path, guards, handler] of routes) {
    app.on(method, [path], road.row(path, guards, handler));
  }
}

/** Every row's method and path, in table order (tests/docs_test.ts holds docs/server/api.md to it). */
export function routeList(): { method: Method; path: string }[] {
  return ROUTES.map(([method, path]) => ({ method, path }));
}

/**
 * POST /token?grant_type=...: the grant types are the `GRANTS` table below,
 * in the order the unsupported_grant_type answer names them: `password`
 * (e-mail or phone), `refresh_token`, `pkce` (the code of a PKCE flow,
 * auth/pkce.ts) and `id_token` (a native app's ID token, id_token.ts).
 */
import { refuseBanned } from "../auth/ban.ts";
import { exchangeAuthCode } from "../auth/pkce.ts";
import { idTokenGrant } from "./id_token.ts";
import { weakPasswordInfo } from "../auth/pwned.ts";
import { passwordAttempt } from "../auth/hooks_install.ts";
import { RefreshTokenReusedError, type TokenSet } from "../auth/sessions.ts";
import { normalizePhone, type UserRow } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { clientIp, type Ctx } from "./context.ts";
import { ApiError, badRequest, unprocessable } from "./errors.ts";
import { type Body, optString, readBody } from "./input.ts";
import { tokenSetResponse } from "./headers.ts";

/** Handles one grant type; answers with a Response (usually `c.json(tokenSet)`). */
export type GrantHandler = (c: Ctx, body: Body, s: Services) => Promise<Response>;

/**
 * A bcrypt cost-10 hash of a password nobody knows: an unknown user's sign-in
 * verifies against it, so it takes as long as a known user's.
 */
const DUMMY_HASH = "$2a$10$6o5DaM8FqRojpRcuBFQnAezOpdP63qvSKUuJNh26Ka8LLShwWfCqO";

function invalidCredentials(): ApiError {
  return new ApiError(400, "invalid_credentials", "Invalid login credentials");
}

/** The password grant: (email | phone) + password. */
export async function passwordGrant(c: Ctx, body: Body, s: Services): Promise<Response> {
  const email = optString(body, "email", 320);
  const phone = optString(body, "phone", 64);
  const password = optString(body, "password", 1024);
  if (email && phone) {
    throw badRequest("Only an email address or phone number should be provided on login.");
  }
  if (!email && !phone) throw badRequest("missing email or phone");
  if (!password) throw badRequest("password is required");
  let user: UserRow | null;
  if (email) {
    if (!s.config.external.emailEnabled) {
      throw unprocessable("Email logins are disabled", "email_provider_disabled");
    }
    user = await s.users.findByEmail(email);
  } else {
    if (!s.config.external.phoneEnabled) {
      throw unprocessable("Phone logins are disabled", "phone_provider_disabled");
    }
    const p = normalizePhone(phone!);
    user = p ? await s.users.findByPhone(p) : null;
  }
  const stored = user?.encrypted_password || DUMMY_HASH;
  // A client that went away before its verification began gets none (HashAbandonedError):
  // nothing is decided, recorded or written for it.
  const ok = await s.passwords.verify(password, stored, c.req.raw.signal);
  if (user?.encrypted_password) await passwordAttempt(s, user, ok, clientIp(c)); // auth hook
  if (!user || !user.encrypted_password || !ok) throw invalidCredentials();
  const now = s.clock.now();
  refuseBanned(user, now, "oauth");
  if (email && !user.email_confirmed_at) {
    throw new ApiError(400, "email_not_confirmed", "Email not confirmed");
  }
  if (!email && !user.phone_confirmed_at) {
    throw new ApiError(400, "phone_not_confirmed", "Phone not confirmed");
  }
  const roles = c.env?.signInRoles;
  if (roles && !roles.includes(user.role || "authenticated")) {
    // The console's sign-in: no session, audit entry or sign-in for an account it refuses.
    throw new ApiError(403, "not_admin", "This account may not use the console");
  }
  if (s.passwords.needsRehash(user.encrypted_password)) {
    // An imported hash (argon2, $2y$, another cost): store ours from now on.
    const fresh = await s.passwords.hash(password);
    user = await s.users.update(user.id, { encrypted_password: fresh }) ?? user;
  }
  // The session, last_sign_in_at and the audit entry: one statement (Sessions.issue).
  const set = await s.sessions.issue(user, {
    method: "password",
    ip: clientIp(c),
    userAgent: c.req.header("user-agent"),
    audit: {
      action: "login",
      actorId: user.id,
      actorUsername: user.email ?? user.phone ?? "",
      logType: "account",
      traits: { provider: email ? "email" : "phone" },
    },
  });
  // GoTrue's hint that the (correct) password no longer meets the policy (auth/pwned.ts).
  const weak = await weakPasswordInfo(s, password);
  if (weak) set.weak_password = weak;
  s.events.emit("signin", { method: "password" });
  return tokenSetResponse(c, set);
}

/** The refresh_token grant: rotation and reuse detection live in Sessions.refresh. */
export async function refreshTokenGrant(c: Ctx, body: Body, s: Services): Promise<Response> {
  return tokenSetResponse(c, await refreshTokenSet(body, s, clientIp(c)));
}

/** The refresh_token grant's token set for request body `body` from client `ip`. */
export async function refreshTokenSet(body: Body, s: Services, ip: string): Promise<TokenSet> {
  const token = optString(body, "refresh_token", 512);
  if (!token) throw badRequest("refresh_token is required");
  let set;
  try {
    // The token_refreshed audit entry is written with the exchange (Sessions.refresh).
    set = await s.sessions.refresh(token, { ip });
  } catch (e) {
    if (e instanceof RefreshTokenReusedError && e.familyRevoked) {
      await auditReuse(s, e.session.user_id, e.session.id, ip);
    }
    throw e;
  }
  s.events.emit("token_refresh", {});
  return set;
}

/**
 * A reused refresh token revoked its whole session (Sessions.refresh): the
 * audit log says so (`token_revoked`, GoTrue's action), for the session's
 * user, so an operator sees the suspected theft.
 */
async function auditReuse(s: Services, userId: string, sessionId: string, ip: string) {
  const user = await s.users.findById(userId);
  await s.audit.record({
    action: "token_revoked",
    actorId: userId,
    actorUsername: user?.email ?? user?.phone ?? "",
    logType: "token",
    traits: { reason: "refresh_token_reused", session_id: sessionId },
    ip,
  });
}

/** The pkce grant: `auth_code` and `code_verifier` of a PKCE flow (auth/pkce.ts). */
export async function pkceGrant(c: Ctx, body: Body, s: Services): Promise<Response> {
  const set = await exchangeAuthCode(
    s,
    optString(body, "auth_code", 256) ?? "",
    optString(body, "code_verifier", 256) ?? "",
    clientIp(c),
  );
  const user = set.user as { id?: string; email?: string };
  await s.audit.record({
    action: "login",
    actorId: user.id,
    actorUsername: user.email ?? "",
    logType: "account",
    traits: { grant_type: "pkce" },
    ip: clientIp(c),
  });
  s.events.emit("signin", { method: "pkce" });
  return tokenSetResponse(c, set);
}

/** Every grant type of POST /token. */
export const GRANTS: ReadonlyMap<string, GrantHandler> = new Map([
  ["password", passwordGrant],
  ["refresh_token", refreshTokenGrant],
  ["pkce", pkceGrant],
  ["id_token", idTokenGrant],
]);

/** POST /token. */
export async function token(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const grantType = c.req.query("grant_type") ??
    (typeof body.grant_type === "string" ? body.grant_type : "");
  if (grantType === "web3") {
    // Web3 sign-in is a GoTrue feature we do not have: answer as GoTrue does with it off
    // (web3.go, before reading the body).
    throw new ApiError(422, "web3_provider_disabled", "Web3 provider is disabled");
  }
  const table = GRANTS;
  const handler = table.get(grantType);
  if (!handler) {
    throw new ApiError(
      400,
      "unsupported_grant_type",
      grantType
        ? `unsupported_grant_type: grant_type "${grantType.slice(0, 64)}" is not one of ${
          [...table.keys()].join(", ")
        }`
        : `unsupported_grant_type: grant_type is required (one of ${[...table.keys()].join(", ")})`,
    );
  }
  return await handler(c, body, s);
}

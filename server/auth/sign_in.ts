/**
 * The sign-in use cases of POST /token: the password grant, the refresh
 * grant (rotation and reuse detection live in Sessions.refresh) and the pkce
 * grant (auth/pkce.ts). Each writes its audit entry and emits its event.
 */
import { AuthError } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import { refuseBanned } from "./ban.ts";
import { passwordAttempt } from "./hooks_install.ts";
import { exchangeAuthCode } from "./pkce.ts";
import { weakPasswordInfo } from "./pwned.ts";
import { RefreshTokenReusedError, type TokenSet } from "./sessions.ts";
import { normalizePhone, type UserRow } from "./users.ts";
import { signInUser } from "./accounts.ts";
import { linkIdentity } from "./identities.ts";
import type { ProviderName } from "../config/mod.ts";
import type { ProviderUser } from "../providers/types.ts";

/**
 * A bcrypt cost-10 hash of a password nobody knows: an unknown user's sign-in
 * verifies against it, so it takes as long as a known user's.
 */
const DUMMY_HASH = "$2a$10$6o5DaM8FqRojpRcuBFQnAezOpdP63qvSKUuJNh26Ka8LLShwWfCqO";

/** The password grant: (email | phone) + password; `roles` limits who may sign in (the console). */
export async function signInWithPassword(
  d: Domain,
  r: { email?: string; phone?: string; password: string; roles?: readonly string[] },
  meta: RequestMeta,
): Promise<TokenSet> {
  const { email, phone, password } = r;
  let user: UserRow | null;
  if (email) {
    if (!d.config.external.emailEnabled) {
      throw new AuthError("email_provider_disabled", "Email logins are disabled");
    }
    user = await d.users.findByEmail(email);
  } else {
    if (!d.config.external.phoneEnabled) {
      throw new AuthError("phone_provider_disabled", "Phone logins are disabled");
    }
    const p = normalizePhone(phone!);
    user = p ? await d.users.findByPhone(p) : null;
  }
  const stored = user?.encrypted_password || DUMMY_HASH;
  // A client that went away before its verification began gets none (HashAbandonedError):
  // nothing is decided, recorded or written for it.
  const ok = await d.passwords.verify(password, stored, meta.signal);
  if (user?.encrypted_password) await passwordAttempt(d, user, ok, meta.ip); // auth hook
  if (!user || !user.encrypted_password || !ok) {
    throw new AuthError("invalid_credentials", "Invalid login credentials");
  }
  refuseBanned(user, d.clock.now(), "oauth");
  if (email && !user.email_confirmed_at) {
    throw new AuthError("email_not_confirmed", "Email not confirmed");
  }
  if (!email && !user.phone_confirmed_at) {
    throw new AuthError("phone_not_confirmed", "Phone not confirmed");
  }
  if (r.roles && !r.roles.includes(user.role || "authenticated")) {
    // The console's sign-in: no session, audit entry or sign-in for an account it refuses.
    throw new AuthError("not_admin", "This account may not use the console");
  }
  if (d.passwords.needsRehash(user.encrypted_password)) {
    // An imported hash (argon2, $2y$, another cost): store ours from now on.
    const fresh = await d.passwords.hash(password);
    user = await d.users.update(user.id, { encrypted_password: fresh }) ?? user;
  }
  // The session, last_sign_in_at and the audit entry: one statement (Sessions.issue).
  const set = await d.sessions.issue(user, {
    method: "password",
    ip: meta.ip,
    userAgent: meta.userAgent,
    audit: {
      action: "login",
      actorId: user.id,
      actorUsername: user.email ?? user.phone ?? "",
      logType: "account",
      traits: { provider: email ? "email" : "phone" },
    },
  });
  // GoTrue's hint that the (correct) password no longer meets the policy (auth/pwned.ts).
  const weak = await weakPasswordInfo(d, password);
  if (weak) set.weak_password = weak;
  d.events.emit("signin", { method: "password" });
  return set;
}

/** The refresh grant for `token` from client `ip`. */
export async function refreshGrant(d: Domain, token: string, ip: string): Promise<TokenSet> {
  let set;
  try {
    // The token_refreshed audit entry is written with the exchange (Sessions.refresh).
    set = await d.sessions.refresh(token, { ip });
  } catch (e) {
    if (e instanceof RefreshTokenReusedError && e.familyRevoked) {
      await auditReuse(d, e.session.user_id, e.session.id, ip);
    }
    throw e;
  }
  d.events.emit("token_refresh", {});
  return set;
}

/**
 * A reused refresh token revoked its whole session (Sessions.refresh): the
 * audit log says so (`token_revoked`, GoTrue's action), for the session's
 * user, so an operator sees the suspected theft.
 */
async function auditReuse(d: Domain, userId: string, sessionId: string, ip: string) {
  const user = await d.users.findById(userId);
  await d.audit.record({
    action: "token_revoked",
    actorId: userId,
    actorUsername: user?.email ?? user?.phone ?? "",
    logType: "token",
    traits: { reason: "refresh_token_reused", session_id: sessionId },
    ip,
  });
}

/** The pkce grant: `auth_code` and `code_verifier` of a PKCE flow. */
export async function signInWithAuthCode(
  d: Domain,
  authCode: string,
  codeVerifier: string,
  meta: RequestMeta,
): Promise<TokenSet> {
  const set = await exchangeAuthCode(d, authCode, codeVerifier, meta.ip);
  const user = set.user as { id?: string; email?: string };
  await d.audit.record({
    action: "login",
    actorId: user.id,
    actorUsername: user.email ?? "",
    logType: "account",
    traits: { grant_type: "pkce" },
    ip: meta.ip,
  });
  d.events.emit("signin", { method: "pkce" });
  return set;
}

/**
 * The id_token grant once the provider's token is verified: signs the user in
 * (creating them, the redirect flow's account decision), or links the
 * identity to the signed-in user `linkTo` (its gates already passed).
 */
export async function signInWithIdToken(
  d: Domain,
  verified: { provider: ProviderName; user: ProviderUser; emailOptional: boolean },
  linkTo: string | null,
  meta: RequestMeta,
): Promise<TokenSet> {
  const ip = meta.ip;
  let user: UserRow;
  if (linkTo) {
    user = await linkIdentity(d, linkTo, verified.provider, verified.user, ip);
    await d.mailer.notify("identity_linked", user, { Provider: verified.provider });
  } else {
    const outcome = await signInUser(d, verified.provider, verified.user, {
      emailOptional: verified.emailOptional,
      ip,
    });
    user = outcome.user;
    if (outcome.linkedByEmail) {
      await d.mailer.notify("identity_linked", user, { Provider: verified.provider });
    }
  }
  const set = await d.sessions.issue(user, {
    method: "oauth",
    provider: verified.provider,
    ip,
    userAgent: meta.userAgent?.slice(0, 500),
  });
  await d.audit.record({
    action: "login",
    actorId: user.id,
    actorUsername: user.email ?? user.phone ?? "",
    logType: "account",
    traits: { provider: verified.provider, grant_type: "id_token" },
    ip,
  });
  d.events.emit("signin", { method: "oauth", provider: verified.provider });
  return set;
}

/** POST /logout: ends the sessions of `scope` (global, local, others) and audits it. */
export async function signOut(
  d: Domain,
  user: UserRow,
  sessionId: string | undefined,
  scope: "global" | "local" | "others",
  meta: RequestMeta,
): Promise<void> {
  await d.sessions.logout(user.id, sessionId, scope);
  await d.audit.record({
    action: "logout",
    actorId: user.id,
    actorUsername: user.email ?? user.phone ?? "",
    logType: "account",
    traits: { scope },
    ip: meta.ip,
  });
}

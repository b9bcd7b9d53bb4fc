/**
 * Confirming an address of an account nobody has proved yet: the one rule
 * against pre-account takeover, used by every path that confirms (the e-mail
 * links and codes of /verify, the SMS code, an invite, recovery, an admin's
 * `email_confirm` / `phone_confirm`, a provider sign-in with a verified
 * address).
 *
 * The attack: someone signs up with another person's address and a password
 * of their own; the account stays unconfirmed. When the real owner later
 * proves the address by another path (magic link, code, invite, provider, a
 * sign-up of their own), the squatter's password, identities and sessions
 * must not survive.
 *
 * The rule. An account is unproven while neither its e-mail nor its phone is
 * confirmed (and it is not anonymous). Confirming an address of an unproven account
 * - keeps only the password the confirming person set: the one sent in the
 *   very request that confirms (POST /verify `password`, an admin's
 *   `password`), else the one of the sign-up whose own confirmation this is
 *   (its one-time token carries a {@link SignupClaim}), else none;
 * - keeps user_metadata only from that same sign-up (else `{}`);
 * - removes every identity but the confirmed channel's (a provider identity
 *   with an unverified copy of the address is the squatter's too), the other
 *   channel's unconfirmed address, and every MFA factor;
 * - ends every session and refresh token issued before.
 * Confirming an address of an account that already has a proven address
 * changes nothing else: its owner is already known.
 *
 * A sign-up's confirmation token carries its claim in the token's data:
 *
 *   data: signupTokenData({})                        // the sign-up that created the row
 *   data: signupTokenData({ password: hash, data })  // a repeated sign-up of the address
 *   data: signupTokenData({ provider: "github" })     // a provider sign-in's unverified address
 *
 * A repeated sign-up's token is issued beside the pending ones (not replacing
 * them), so the owner's own mail keeps working whatever a squatter requests
 * meanwhile; the first confirmation revokes them all.
 */
import type { Queryable } from "../db/db.ts";
import type { Mfa } from "./mfa.ts";
import type { Sessions } from "./sessions.ts";
import type { UserFields, UserRow, Users } from "./users.ts";

/** The key of a one-time token's data that marks a sign-up's own confirmation. */
export const SIGNUP_CLAIM_KEY = "signup";

/** What a sign-up's confirmation proves once the address owner confirms it. */
export interface SignupClaim {
  /** Hash of the password that sign-up sent; absent: the password stored on the row. */
  password?: string;
  /** user_metadata of that sign-up; absent: as stored on the row. */
  data?: Record<string, unknown>;
  /** The provider of a sign-in that made the account: its identity stays (and only it). */
  provider?: string;
}

/** The one-time token data of a sign-up's confirmation. */
export function signupTokenData(claim: SignupClaim): Record<string, unknown> {
  return { [SIGNUP_CLAIM_KEY]: claim };
}

/** The sign-up claim a token's data carries, or null when the token is not a sign-up's. */
export function signupClaimOf(
  data: Record<string, unknown> | null | undefined,
): SignupClaim | null {
  const c = data?.[SIGNUP_CLAIM_KEY];
  if (!c || typeof c !== "object" || Array.isArray(c)) return null;
  const claim = c as Record<string, unknown>;
  const out: SignupClaim = {};
  if (typeof claim.password === "string") out.password = claim.password;
  if (claim.data && typeof claim.data === "object" && !Array.isArray(claim.data)) {
    out.data = claim.data as Record<string, unknown>;
  }
  if (typeof claim.provider === "string") out.provider = claim.provider;
  return out;
}

/**
 * True while neither the e-mail nor the phone of the account is confirmed (an
 * anonymous account is its session holder's: it has no address to squat).
 */
export function isUnproven(
  user: Pick<UserRow, "email_confirmed_at" | "phone_confirmed_at" | "is_anonymous">,
): boolean {
  return !user.email_confirmed_at && !user.phone_confirmed_at && !user.is_anonymous;
}

/**
 * Whether POST /verify of `type` may set the password sent with it on
 * `user`: only as the first password of an account, on the confirmation of
 * a sign-up or an invite, where the account has none, or nobody has proven
 * it yet (the confirmation then keeps no one else's). Anything else (a
 * recovery, a magic link, a code of `type` email, the account of a proven
 * owner) would change a password, which is PUT /user's, with its rules: aal2
 * once the user has a verified factor, the other sessions ended, the
 * password-changed notice. docs/security.md.
 */
export function verifyMaySetPassword(
  type: string,
  user: Pick<
    UserRow,
    "encrypted_password" | "email_confirmed_at" | "phone_confirmed_at" | "is_anonymous"
  >,
): boolean {
  if (type !== "signup" && type !== "invite") return false;
  return !user.encrypted_password || isUnproven(user);
}

/** How an address is being confirmed. */
export interface Confirmation {
  /** The addresses confirmed. */
  channels: ("email" | "phone")[];
  /** The sign-up whose own confirmation this is (from its token), or null for any other path. */
  signup: SignupClaim | null;
  /** A password hash the confirming person sets in this very request. */
  password?: string;
  /** user_metadata the confirming person sets in this very request (an admin's). */
  data?: Record<string, unknown>;
  /** Identities (by provider) that stay on an unproven account; default: the confirmed channels'. */
  keepProviders?: string[];
  now: Date;
}

/** What a confirmation writes. */
export interface ConfirmationPlan {
  fields: UserFields;
  /**
   * For an unproven account: the identity providers that stay; everything
   * else (other identities, factors, sessions, refresh tokens) ends. Null
   * when the account was proven already.
   */
  reset: { keepProviders: string[] } | null;
}

/** The decision of {@link confirmAddress}, without touching the database. */
export function planConfirmation(user: UserRow, how: Confirmation): ConfirmationPlan {
  const fields: UserFields = {};
  for (const ch of how.channels) {
    if (ch === "email" && user.email && !user.email_confirmed_at) {
      fields.email_confirmed_at = how.now;
    }
    if (ch === "phone" && user.phone && !user.phone_confirmed_at) {
      fields.phone_confirmed_at = how.now;
    }
  }
  const confirms = fields.email_confirmed_at !== undefined ||
    fields.phone_confirmed_at !== undefined;
  if (!confirms || !isUnproven(user)) {
    if (how.password !== undefined) fields.encrypted_password = how.password;
    return { fields, reset: null };
  }
  // Nobody proved this account before: nothing stays that the confirming person did not set.
  fields.encrypted_password = how.password ?? how.signup?.password ??
    (how.signup ? user.encrypted_password : null);
  fields.raw_user_meta_data = how.data ?? how.signup?.data ??
    (how.signup ? user.raw_user_meta_data : {});
  const keepProviders = how.keepProviders ??
    (how.signup?.provider ? [how.signup.provider] : [...how.channels]);
  // An unconfirmed address of another channel is as unproven as the password: it goes too
  // (else its holder could confirm it next and sign in to the now proven account).
  if (user.phone && !user.phone_confirmed_at && !keepProviders.includes("phone")) {
    if (!how.channels.includes("phone")) fields.phone = null;
  }
  if (user.email && !user.email_confirmed_at && !keepProviders.includes("email")) {
    if (!how.channels.includes("email")) fields.email = null;
  }
  const app = { ...(user.raw_app_meta_data ?? {}) };
  app.providers = keepProviders;
  if (keepProviders.length) app.provider = keepProviders[0];
  else delete app.provider;
  fields.raw_app_meta_data = app;
  return { fields, reset: { keepProviders } };
}

/** What {@link confirmAddress} needs. */
export interface ConfirmDeps {
  users: Users;
  /** Ends the user's sessions (refresh tokens go with them). */
  sessions: Pick<Sessions, "endAll">;
  /** Removes the user's MFA factors. */
  mfa: Pick<Mfa, "deleteAllFactors">;
}

/** The deps of a server's services. */
export function confirmDepsOf(s: ConfirmDeps): ConfirmDeps {
  return { users: s.users, sessions: s.sessions, mfa: s.mfa };
}

/**
 * Confirms addresses of `user` by the rule above, in `q`: a transaction
 * (`db.transaction((tx) => confirmAddress(deps, user, how, tx))`), which
 * other writes may share. Returns the written row,
 * with its local identities (email / phone) in step.
 */
export async function confirmAddress(
  deps: ConfirmDeps,
  user: UserRow,
  how: Confirmation,
  q: Queryable,
): Promise<UserRow> {
  const plan = planConfirmation(user, how);
  if (!Object.keys(plan.fields).length) return user;
  await deps.users.lockProfile(user.id, q); // the user row before identities (lock order)
  const written = await deps.users.update(user.id, plan.fields, q) ?? user;
  if (plan.reset) await endUnprovenAccess(deps, user.id, plan.reset.keepProviders, q);
  for (const ch of how.channels) {
    if (plan.reset && !plan.reset.keepProviders.includes(ch)) continue;
    if (ch === "email" && written.email) await deps.users.syncLocalIdentity(written, "email", q);
    if (ch === "phone" && written.phone) await deps.users.syncLocalIdentity(written, "phone", q);
  }
  return await deps.users.findById(user.id, q) ?? written;
}

/**
 * {@link confirmAddress} in a transaction of its own, opened only when there
 * is anything to write (a confirmed user's magic link writes nothing here).
 */
export async function confirmAddressNow(
  s: ConfirmDeps,
  user: UserRow,
  how: Confirmation,
): Promise<UserRow> {
  if (!Object.keys(planConfirmation(user, how).fields).length) return user;
  return await s.users.transaction((tx) => confirmAddress(confirmDepsOf(s), user, how, tx));
}

/**
 * Ends what anybody but the confirming person may hold on an unproven
 * account: identities of other providers, MFA factors, sessions and their
 * refresh tokens. The user row must be locked by the caller (lockProfile).
 */
export async function endUnprovenAccess(
  deps: ConfirmDeps,
  userId: string,
  keepProviders: string[],
  q: Queryable,
): Promise<void> {
  await deps.users.deleteIdentitiesExcept(userId, keepProviders, q);
  await deps.mfa.deleteAllFactors(userId, q);
  await deps.sessions.endAll(userId, q);
}

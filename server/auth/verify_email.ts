/**
 * Verification of e-mail tokens (links and typed codes) and what each one
 * does to the user: confirm the address (signup, invite, magic link,
 * recovery) or complete an e-mail change. Used by GET and POST /verify.
 *
 * Types of the request and the token types they accept:
 *   signup → confirmation; invite → invite; recovery → recovery;
 *   magiclink → magiclink, confirmation (a new user's first link);
 *   email (auth-js OTP) → magiclink, confirmation, invite, recovery;
 *   email_change → email_change_new, email_change_current.
 *
 * With MAILER_SECURE_EMAIL_CHANGE_ENABLED both addresses confirm a change:
 * a link of one side answers "partial" (no session) until the other side's
 * completes it (auth/email_change.ts).
 */
import { refuseBanned } from "./ban.ts";
import { AuthError, invalid, uniqueViolationAnswer } from "./errors.ts";
import { checkPassword } from "./pwned.ts";
import { type OneTimeTokenRow, otpInvalid } from "./otp.ts";
import { confirmAddressNow, isUnproven, signupClaimOf, verifyMaySetPassword } from "./confirm.ts";
import type { UserRow } from "./users.ts";
import { normalizeEmail } from "./users.ts";
import { BOTH_CONFIRMED, sideOf } from "./email_change.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import type { TokenSet } from "./sessions.ts";

/** The e-mail verification types of /verify. */
export const EMAIL_VERIFY_TYPES = [
  "signup",
  "invite",
  "recovery",
  "magiclink",
  "email",
  "email_change",
] as const;
export type EmailVerifyType = typeof EMAIL_VERIFY_TYPES[number];

const ACCEPTS: Record<EmailVerifyType, string[]> = {
  signup: ["confirmation"],
  invite: ["invite"],
  recovery: ["recovery"],
  magiclink: ["magiclink", "confirmation"],
  email: ["magiclink", "confirmation", "invite", "recovery"],
  email_change: ["email_change_new", "email_change_current"],
};

/** How the token is presented. */
export type EmailCredential =
  | { kind: "link"; token: string }
  | { kind: "code"; email: string; code: string };

/** The outcome of a verification. */
export interface EmailVerified {
  user: UserRow;
  token: OneTimeTokenRow;
  /** The type the user's token really had, as a link `type` (signup, invite, ...). */
  type: string;
  /** True when a secure e-mail change still waits for the other address. */
  partial: boolean;
}

const LINK_TYPE: Record<string, string> = {
  confirmation: "signup",
  invite: "invite",
  recovery: "recovery",
  magiclink: "magiclink",
  email_change_new: "email_change",
  email_change_current: "email_change",
};

async function findTokenOwner(
  s: Domain,
  type: EmailVerifyType,
  cred: EmailCredential,
): Promise<UserRow | null> {
  if (cred.kind === "link") {
    const row = await s.otp.peekLink(ACCEPTS[type], cred.token);
    return row ? await s.users.findById(row.user_id) : null;
  }
  const email = normalizeEmail(cred.email);
  const userId = await s.otp.userIdForRecipient(email, ACCEPTS[type]);
  return userId ? await s.users.findById(userId) : null;
}

/** 422: a password on /verify where it would change one (auth/confirm.ts verifyMaySetPassword). */
function passwordNotHere(): AuthError {
  return invalid(
    "password can be set on verify only as the first password of a sign-up or an invite; change a password with PUT /user",
  );
}

/**
 * Consumes the token and applies it. `password` sets the first password on
 * signup and invite verification, and is refused anywhere else
 * (verifyMaySetPassword); with `passwordRequired` (POST /verify) it must be
 * given for signup when the user has none (GoTrue's verify.go). A link
 * opened in a browser (GET) cannot carry one and confirms a password-less
 * user as is.
 */
export async function verifyEmailToken(
  s: Domain,
  type: EmailVerifyType,
  cred: EmailCredential,
  opts: { password?: string; passwordRequired?: boolean; ip?: string } = {},
): Promise<EmailVerified> {
  const owner = await findTokenOwner(s, type, cred);
  if (!owner) throw otpInvalid();
  // A password only where it is the account's first (auth/confirm.ts), checked before the
  // token is used, so the request can be sent again without it.
  const setsPassword = opts.password !== undefined && opts.password !== "";
  if (setsPassword) {
    if (!verifyMaySetPassword(type, owner)) throw passwordNotHere();
    await checkPassword(s, opts.password!);
  } else if (type === "signup" && opts.passwordRequired && !owner.encrypted_password) {
    throw invalid("password is required to confirm a sign-up without a password");
  }
  const token = cred.kind === "link"
    ? await s.otp.verifyLink(ACCEPTS[type], cred.token)
    : await s.otp.verifyCode(ACCEPTS[type], normalizeEmail(cred.email), cred.code);
  let user = await s.users.findById(token.user_id);
  if (!user) throw otpInvalid();
  const now = s.clock.now();
  refuseBanned(user, now);
  const linkType = LINK_TYPE[token.token_type] ?? type;
  const firstConfirmation = !user.email_confirmed_at;

  if (token.token_type.startsWith("email_change")) {
    return await applyEmailChange(s, user, token, opts.ip);
  }
  if (token.relates_to !== user.email) throw otpInvalid(); // the address moved meanwhile

  // The one rule of auth/confirm.ts: confirming an unproven account keeps only what the
  // confirming person set (this request's password, or the sign-up this token belongs to).
  if (setsPassword && !verifyMaySetPassword(type, user)) throw passwordNotHere();
  const password = setsPassword ? await s.passwords.hash(opts.password!) : undefined;
  const confirmed = user;
  user = await confirmAddressNow(s, confirmed, {
    channels: ["email"],
    // The mail of the request that created the account carries its sign-up's claim: a
    // confirmation or invite, or the magic link /otp sends a new user on an autoconfirm
    // server (so its `data` survives, as in GoTrue).
    signup: signupClaimOf(token.data),
    password,
    now,
  });
  // A confirmed address ends its other pending link mails of the same purpose.
  if (
    token.token_type === "confirmation" || token.token_type === "invite" || isUnproven(confirmed)
  ) {
    await s.otp.revoke(user.id, ["confirmation", "invite"]);
  }
  await s.audit.record({
    action: token.token_type === "confirmation"
      ? "user_signedup"
      : token.token_type === "invite"
      ? "invite_accepted"
      : "login",
    actorId: user.id,
    actorUsername: user.email ?? "",
    logType: token.token_type === "confirmation" || token.token_type === "invite"
      ? "team"
      : "account",
    traits: { provider: "email", type: linkType },
    ip: opts.ip,
  });
  // GoTrue's User.Confirm also records the confirmation in user_metadata.
  if (firstConfirmation && user.email_confirmed_at) {
    user = await s.users.update(user.id, { raw_user_meta_data: verifiedMeta(user) }) ?? user;
  }
  return { user, token, type: linkType, partial: false };
}

async function applyEmailChange(
  s: Domain,
  user: UserRow,
  token: OneTimeTokenRow,
  ip?: string,
): Promise<EmailVerified> {
  const newEmail = user.email_change;
  if (!newEmail) throw otpInvalid();
  const expected = token.token_type === "email_change_new" ? newEmail : user.email;
  if (token.relates_to !== expected) throw otpInvalid();
  if (s.config.mailer.secureEmailChangeEnabled && user.email) {
    // Both sides confirm, each recorded as its own bit in one statement: a second link of
    // the same side is no stand-in for the other, and of two links opened at once exactly
    // one completes the change (auth/email_change.ts).
    const record = await s.users.confirmEmailChangeSide(user.id, sideOf(token.token_type));
    if (record !== BOTH_CONFIRMED) {
      const updated = await s.users.findById(user.id) ?? user;
      return { user: updated, token, type: "email_change", partial: true };
    }
  }
  const taken = await s.users.findByEmail(newEmail);
  if (taken && taken.id !== user.id) {
    throw new AuthError(
      "email_exists",
      "A user with this email address has already been registered",
    );
  }
  const oldEmail = user.email ?? "";
  const updated = await s.users.update(user.id, {
    email: newEmail,
    email_confirmed_at: s.clock.now(),
    email_change: null,
    email_change_sent_at: null,
    email_change_confirm_status: 0,
    is_anonymous: false, // an anonymous user with a confirmed address is a permanent one
  }).catch((e) => {
    // Taken since the check above by a concurrent change: the answer the check gives.
    throw uniqueViolationAnswer(e) ?? e;
  }) ?? user;
  await s.users.syncLocalIdentity(updated, "email");
  await s.otp.revoke(user.id, ["email_change_new", "email_change_current"]);
  await s.audit.record({
    action: "user_modified",
    actorId: user.id,
    actorUsername: newEmail,
    logType: "user",
    traits: { change: "email" },
    ip,
  });
  if (oldEmail) {
    await s.mailer.notify("email_changed", { ...updated, email: oldEmail }, {
      Email: newEmail,
      OldEmail: oldEmail,
    });
  }
  return { user: updated, token, type: "email_change", partial: false };
}

/** user_metadata with `email_verified: true`, as GoTrue's User.Confirm writes it. */
export function verifiedMeta(user: { raw_user_meta_data: Record<string, unknown> | null }) {
  return { ...(user.raw_user_meta_data ?? {}), email_verified: true };
}

/** The session a verified link or code signs its user into. */
export async function verifiedSession(
  s: Domain,
  v: EmailVerified,
  meta: RequestMeta,
): Promise<TokenSet> {
  const set = await s.sessions.issue(v.user, {
    method: "otp",
    ip: meta.ip,
    userAgent: meta.userAgent,
  });
  s.events.emit("signin", { method: v.type === "magiclink" ? "magiclink" : "otp" });
  return set;
}

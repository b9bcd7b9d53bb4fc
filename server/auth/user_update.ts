/**
 * The PUT /user use case: the signed-in user changes their own e-mail,
 * phone, password or `data`.
 *
 * The steps of `USER_UPDATE_STEPS` run over one `UserUpdate`: every step
 * checks the request and adds columns to `u.fields` (or work to `u.effects`
 * and `u.after`); after all steps ran, the columns are written in ONE update
 * and the `after` callbacks run in order. What can refuse the request (the
 * reauthentication nonce, an address taken by another user, a bad password)
 * runs before what sends mail or hashes.
 *
 * - `phone`: a code to the new number (phone_change); with SMS_AUTOCONFIRM
 *   the number changes at once.
 * - `email`: the e-mail change (a mail to the new address, and to the current
 *   one too with MAILER_SECURE_EMAIL_CHANGE_ENABLED; at once only for an
 *   anonymous user with MAILER_AUTOCONFIRM).
 * - `password`: strength, same_password, SECURITY_UPDATE_PASSWORD_REQUIRE_*
 *   (`current_password`, the `nonce` of GET /reauthenticate); other sessions
 *   end; the password-changed notification mail.
 * - `data`: merged into user_metadata (a null value deletes the key, as GoTrue).
 */
import { AuthError } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import { emailChangeLimitKey, sendEmailChangeMails } from "./action_mail.ts";
import { checkObjectBounds, mergeMetadata } from "./metadata.ts";
import { type PkceParams, withFlowState } from "./pkce.ts";
import { checkPassword } from "./pwned.ts";
import { verifyRedirectTo } from "./redirect.ts";
import type { SessionRow } from "./sessions.ts";
import { uniqueViolationAnswer } from "./errors.ts";
import type { UserFields, UserRow } from "./users.ts";

/** PUT /user's request, as the handler parsed it. */
export interface UserUpdateRequest {
  /** The new address, checked and canonical (absent when the body had none). */
  email?: string;
  /** The new number, E.164 digits (absent when the body had none). */
  phone?: string;
  /** `password` as given (may be empty: refused). */
  password?: string;
  currentPassword?: string;
  nonce?: string;
  data?: Record<string, unknown>;
  /** `redirect_to` of the request, unchecked. */
  redirectTo?: string;
  /** `code_challenge`: the e-mail change's link continues a PKCE flow. */
  pkce?: PkceParams;
}

/** One PUT /user request in progress. */
export interface UserUpdate {
  d: Domain;
  r: UserUpdateRequest;
  meta: RequestMeta;
  /** The session of the token, when it names one. */
  session: SessionRow | null;
  /** The user as loaded before any step. */
  user: UserRow;
  /** Columns written in one update after all steps. */
  fields: UserFields;
  /** True once the password step accepted a new password. */
  passwordChanged: boolean;
  /** True once `current_password` was checked (see checkCurrentPassword). */
  currentPasswordChecked?: boolean;
  /**
   * Work with effects outside the row (a code sent, a nonce used up): run in
   * order once EVERY step has checked the request, before the row is written,
   * so a request one step refuses sends nothing and uses up nothing.
   */
  effects: (() => Promise<void>)[];
  /** Run after the row is written, in order, with the written row (mails, audit). */
  after: ((user: UserRow) => Promise<void>)[];
}

/** A step of PUT /user: checks and sets `u.fields`; other traces go to `effects` or `after`. */
export type UserUpdateStep = (u: UserUpdate) => Promise<void>;

/** Sign-in methods of a session that proved the mailbox or phone: a password reset needs no old password. */
const RECOVERY_METHODS = new Set(["otp", "magiclink", "recovery"]);

/**
 * SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD: a new password for a user
 * who has one needs `current_password`, except in a session that came from a
 * recovery, magic link or OTP (the user who forgot it), as GoTrue's UserUpdate.
 */
async function checkCurrentPassword(u: UserUpdate): Promise<void> {
  const { d, user } = u;
  if (u.currentPasswordChecked || !u.r.password || !user.encrypted_password) return;
  if (!d.config.security.updatePasswordRequireCurrentPassword) return;
  if (u.session?.amr.some((e) => RECOVERY_METHODS.has(e.method))) return;
  const message = "Current password required when setting new password.";
  if (!u.r.currentPassword) throw new AuthError("current_password_required", message);
  if (!await d.passwords.verify(u.r.currentPassword, user.encrypted_password)) {
    throw new AuthError("current_password_invalid", message);
  }
  u.currentPasswordChecked = true;
}

/** `phone`: a code to the new number, or the number at once with SMS_AUTOCONFIRM. */
async function phoneStep(u: UserUpdate): Promise<void> {
  const { d, user } = u;
  const phone = u.r.phone;
  if (phone === undefined || phone === user.phone) return;
  const other = await d.users.findByPhone(phone);
  if (other && other.id !== user.id) {
    throw new AuthError(
      "phone_exists",
      "A user with this phone number has already been registered",
    );
  }
  const now = d.clock.now();
  if (d.config.sms.autoconfirm) {
    const oldPhone = user.phone ?? "";
    u.fields.phone = phone;
    u.fields.phone_confirmed_at = now;
    u.fields.is_anonymous = false;
    u.after.push(async (written) => {
      await d.users.syncLocalIdentity(written, "phone");
      if (oldPhone) {
        await d.mailer.notify("phone_changed", written, { Phone: phone, OldPhone: oldPhone });
      }
    });
    return;
  }
  // Sent once every step has accepted the request (`effects`).
  u.effects.push(async () => {
    await d.sms.sendOtp({ userId: user.id, phone, type: "phone_change" });
  });
  u.fields.phone_change = phone;
  u.fields.phone_change_sent_at = now;
}

/** `password` with SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: `nonce` is needed. */
async function nonceStep(u: UserUpdate): Promise<void> {
  const { d, user } = u;
  if (u.r.password === undefined || !d.config.security.updatePasswordRequireReauthentication) {
    return;
  }
  const nonce = u.r.nonce;
  if (!nonce) {
    throw new AuthError("reauthentication_needed", "Password update requires reauthentication");
  }
  // The nonce is used up only once every step accepted the request (the password's
  // strength and same_password included): a typo does not cost it (a new one may be
  // SMTP_MAX_FREQUENCY away).
  await checkCurrentPassword(u);
  const pending = await d.otp.pending(user.id, "reauthentication");
  const refused = () =>
    new AuthError(
      "reauthentication_not_valid",
      "Requires reauthentication: the nonce is invalid or has expired",
    );
  if (!pending) throw refused();
  // Used up once every step has accepted the request, before any other effect (a code
  // sent): a request refused for another reason keeps the nonce.
  u.effects.unshift(async () => {
    const ok = await d.otp.verifyCode(["reauthentication"], pending.relates_to, nonce).then(
      () => true,
      () => false,
    );
    if (!ok) throw refused();
  });
}

/** `email`: the e-mail change. */
async function emailChangeStep(u: UserUpdate): Promise<void> {
  const { d, user, meta } = u;
  const email = u.r.email;
  if (email === undefined || email === user.email) return;
  if (!d.config.external.emailEnabled) {
    throw new AuthError("email_provider_disabled", "Email logins are disabled");
  }
  // GoTrue's order (user.go): a taken address is 422 before any limit is looked at; taken
  // means another user's address or an address of another user's identity.
  if (await d.users.emailTakenByOther(email, user.id)) {
    throw new AuthError(
      "email_exists",
      "A user with this email address has already been registered",
    );
  }
  const oldEmail = user.email;
  // Only an anonymous user gets an address at once with MAILER_AUTOCONFIRM (like a sign-up)
  // and becomes permanent; a permanent user always proves the new address, or anyone
  // signed in could claim an address they do not own (GoTrue's user.go).
  if (d.config.mailer.autoconfirm && user.is_anonymous) {
    u.fields.email = email;
    u.fields.email_confirmed_at = d.clock.now();
    u.fields.email_change = null;
    u.fields.is_anonymous = false;
    u.after.push(async (written) => {
      await d.users.syncLocalIdentity(written, "email");
      if (oldEmail) {
        await d.mailer.notify("email_changed", { ...written, email: oldEmail }, {
          Email: email,
          OldEmail: oldEmail,
        });
      }
    });
    return;
  }
  // SMTP_MAX_FREQUENCY counts the user's change requests, whatever the address (GoTrue's
  // email_change_sent_at): another user's pending change to the same address does not make
  // this one a 429 (it is a 200, as in GoTrue; whoever confirms first gets the address).
  await d.sendLimits.check({
    channel: "email",
    recipient: emailChangeLimitKey(user.id),
    kind: "email_change",
    intervalSec: d.config.smtp.maxFrequency,
  });
  const redirectTo = verifyRedirectTo(d.config, u.r.redirectTo);
  // With `code_challenge` the confirming link continues a PKCE flow (?code=), as in GoTrue.
  const pkce = u.r.pkce;
  u.fields.email_change = email;
  u.fields.email_change_sent_at = d.clock.now();
  u.fields.email_change_confirm_status = 0;
  u.after.push(async (written) => {
    await withFlowState(
      d.db,
      pkce && { ...pkce, userId: written.id, authenticationMethod: "email_change" },
      async (flowStateId) => {
        await sendEmailChangeMails(d, written, { redirectTo, flowStateId });
      },
    );
    await d.audit.record({
      action: "user_modified",
      actorId: written.id,
      actorUsername: oldEmail ?? "",
      logType: "user",
      traits: { email_change_requested: email },
      ip: meta.ip,
    });
  });
}

/** The password-changed notification mail, once the password changed. */
function passwordNoticeStep(u: UserUpdate): Promise<void> {
  u.after.push(async (written) => {
    if (u.passwordChanged) await u.d.mailer.notify("password_changed", written);
  });
  return Promise.resolve();
}

/** `data`: merged into user_metadata. */
function dataStep(u: UserUpdate): Promise<void> {
  const data = u.r.data;
  if (data) {
    u.fields.raw_user_meta_data = mergeMetadata(u.user.raw_user_meta_data ?? {}, data);
    checkObjectBounds("data", u.fields.raw_user_meta_data);
  }
  return Promise.resolve();
}

/** `password`: strength, same_password, the hash; other sessions end. */
async function passwordStep(u: UserUpdate): Promise<void> {
  const { d, user } = u;
  const password = u.r.password;
  if (password === undefined) return;
  if (password === "") throw new AuthError("validation_failed", "password must not be empty");
  // GoTrue checks the request: an anonymous user may set a password with a new address.
  if (user.is_anonymous && !u.r.email && !u.r.phone) {
    throw new AuthError(
      "validation_failed",
      "Updating password of an anonymous user without an email or phone is not allowed",
    );
  }
  await checkPassword(d, password);
  await checkCurrentPassword(u);
  if (user.encrypted_password && await d.passwords.verify(password, user.encrypted_password)) {
    throw new AuthError("same_password", "New password should be different from the old password.");
  }
  u.fields.encrypted_password = await d.passwords.hash(password);
  u.passwordChanged = true;
  u.after.push(async (written) => {
    // Sessions elsewhere must sign in again with the new password.
    await d.sessions.logout(written.id, u.session?.id, "others");
    await d.audit.record({
      action: "user_updated_password",
      actorId: written.id,
      actorUsername: written.email ?? written.phone ?? "",
      logType: "user",
      ip: u.meta.ip,
    });
  });
}

/** The steps of PUT /user, in the order they run. */
export const USER_UPDATE_STEPS: readonly UserUpdateStep[] = [
  phoneStep,
  nonceStep,
  emailChangeStep,
  passwordNoticeStep,
  dataStep,
  passwordStep,
];

/** Applies PUT /user's request for the signed-in `user`; returns the stored row. */
export async function updateOwnUser(
  d: Domain,
  user: UserRow,
  session: SessionRow | null,
  r: UserUpdateRequest,
  meta: RequestMeta,
): Promise<UserRow> {
  const u: UserUpdate = {
    d,
    r,
    meta,
    session,
    user,
    fields: {},
    passwordChanged: false,
    effects: [],
    after: [],
  };
  // What can be refused without side effects is refused before any step sends a code or
  // uses up a nonce, so a refused request changes nothing.
  if (r.password && !(user.is_anonymous && !user.email && !user.phone && !r.email && !r.phone)) {
    await checkPassword(d, r.password);
  }
  // With reauthentication on, the nonce step checks it after asking for the nonce (GoTrue's order).
  if (!d.config.security.updatePasswordRequireReauthentication) await checkCurrentPassword(u);
  for (const step of USER_UPDATE_STEPS) await step(u);
  // Every step accepted the request: now the codes go out (PUT {phone, email: taken}
  // used to send its SMS before the e-mail step refused it).
  for (const fn of u.effects) await fn();
  let written = user;
  if (Object.keys(u.fields).length) {
    // The steps checked that no other user has the new e-mail or phone; one that took it
    // since gets the answer it would get a moment later: 422 email_exists / phone_exists.
    const data = r.data;
    written = await d.users.updateMerging(
      user.id,
      u.fields,
      data
        ? (current) => {
          // Merged over the row as it is once locked: concurrent updates of the metadata
          // each land, as they would one after the other.
          u.fields.raw_user_meta_data = mergeMetadata(current.raw_user_meta_data ?? {}, data);
          checkObjectBounds("data", u.fields.raw_user_meta_data);
        }
        : undefined,
    ).catch((e) => {
      throw uniqueViolationAnswer(e) ?? e;
    }) ??
      (() => {
        throw new AuthError("user_not_found", "User not found");
      })();
    if (!u.passwordChanged) {
      await d.audit.record({
        action: "user_modified",
        actorId: written.id,
        actorUsername: written.email ?? written.phone ?? "",
        logType: "user",
        ip: meta.ip,
      });
    }
  }
  for (const fn of u.after) await fn(written);
  // Steps may have written more (identities, one-time tokens): answer with the stored row.
  return await d.users.findById(written.id) ?? written;
}

/**
 * The phone side of the use cases: what /otp, /verify, /resend and
 * /reauthenticate do when the request names a phone (the sign-up's code is
 * auth/signup.ts, PUT /user's phone step auth/user_update.ts).
 *
 * - POST /otp {phone, create_user}: a code to the number; an unknown number
 *   becomes a user when create_user is true (the default) and sign-ups are
 *   allowed; else 422 otp_disabled (create_user false) or signup_disabled,
 *   as GoTrue answers.
 * - POST /verify {type: "sms" | "phone_change", phone, token}: a session.
 * - POST /resend {type: "sms" | "phone_change", phone}: the code again
 *   (the same answer, limits and timing when there is nothing to resend).
 * - GET /reauthenticate for a user with a phone and no e-mail: a nonce by SMS.
 */
import { AuthError } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import { userCreated } from "./hooks_install.ts";
import { confirmAddressNow, isUnproven, signupClaimOf, signupTokenData } from "./confirm.ts";
import { SMS_CODE_KIND } from "./phone.ts";
import { refuseBanned } from "./ban.ts";
import type { TokenSet } from "./sessions.ts";
import { isUniqueViolation, type UserRow } from "./users.ts";

/** POST /otp with a phone: `{message_id}` once the code is sent. */
export async function sendPhoneOtp(
  s: Domain,
  r: { phone: string; createUser: boolean; data: Record<string, unknown> },
  meta: RequestMeta,
): Promise<{ messageId: string }> {
  const { phone, createUser, data } = r;
  let user = await s.users.findByPhone(phone);
  let created = false;
  if (!user) {
    if (!createUser) throw new AuthError("otp_disabled", "Signups not allowed for otp");
    if (s.config.disableSignup) {
      throw new AuthError("signup_disabled", "Signups not allowed for this instance");
    }
    try {
      user = await s.users.createWithIdentities(
        {
          aud: s.config.jwt.aud,
          role: s.config.jwt.defaultGroupName || "authenticated",
          phone,
          raw_user_meta_data: data,
        },
        ["phone"],
      );
      created = true;
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      user = await s.users.findByPhone(phone);
      if (!user) throw e;
    }
  }
  let messageId = "";
  try {
    // The code of the sign-up this request made keeps its data; a code to an unconfirmed
    // account someone else made keeps nothing of theirs (auth/confirm.ts).
    const sent = await s.sms.sendOtp({
      userId: user.id,
      phone,
      type: "sms",
      data: created ? signupTokenData({}) : undefined,
    });
    messageId = sent.messageId;
    await s.users.update(user.id, { confirmation_sent_at: s.clock.now() });
  } catch (e) {
    // A user made only for this code goes again, so the request can simply be retried.
    if (created) await s.users.delete(user.id).catch(() => {});
    throw e;
  }
  if (created) {
    await s.audit.record({
      action: "user_signedup",
      actorId: user.id,
      actorUsername: phone,
      logType: "team",
      traits: { provider: "phone" },
      ip: meta.ip,
    });
    s.events.emit("signup", { method: "phone" });
    await userCreated(s, user, meta.ip);
  }
  await s.audit.record({
    action: "user_recovery_requested",
    actorId: user.id,
    actorUsername: phone,
    logType: "user",
    traits: { channel: "sms" },
    ip: meta.ip,
  });
  return { messageId };
}

/**
 * POST /verify with type `sms` or `phone_change`: consumes the code and
 * answers with a session. `sms` confirms the number; `phone_change` moves the
 * user to the new number (422 phone_exists when another user took it
 * meanwhile) and sends the phone-changed notification mail.
 */
export async function verifyPhoneCode(
  s: Domain,
  r: { phone: string; token: string; type: "sms" | "phone_change" },
  meta: RequestMeta,
): Promise<TokenSet> {
  const { phone, token, type } = r;
  // A banned user's code is refused before it is used (auth/phone.ts); a ban that landed
  // since is refused here, before anything is written.
  const row = await s.sms.verify([type], phone, token);
  let user = await s.users.findById(row.user_id);
  if (!user) throw new AuthError("otp_expired", "Token has expired or is invalid");
  const now = s.clock.now();
  refuseBanned(user, now);
  const ip = meta.ip;
  if (type === "sms") {
    if (user.phone !== phone) {
      throw new AuthError("otp_expired", "Token has expired or is invalid");
    }
    if (!user.phone_confirmed_at) {
      // The one rule of auth/confirm.ts: an unproven account keeps only what the sign-up of
      // this very code set; a code from /otp keeps no password nor session of anybody.
      const unconfirmed = user;
      user = await confirmAddressNow(s, unconfirmed, {
        channels: ["phone"],
        signup: signupClaimOf(row.data),
        now,
      });
      if (isUnproven(unconfirmed)) await s.otp.revoke(user.id, ["sms"]);
    }
  } else {
    if (user.phone_change !== phone) {
      throw new AuthError("otp_expired", "Token has expired or is invalid");
    }
    const oldPhone = user.phone ?? "";
    const other = await s.users.findByPhone(phone);
    if (other && other.id !== user.id) {
      throw new AuthError(
        "phone_exists",
        "A user with this phone number has already been registered",
      );
    }
    try {
      user = await s.users.update(user.id, {
        phone,
        phone_confirmed_at: now,
        phone_change: "",
        phone_change_sent_at: null,
        is_anonymous: false, // an anonymous user with a confirmed phone is a permanent one
      }) ?? user;
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      throw new AuthError(
        "phone_exists",
        "A user with this phone number has already been registered",
      );
    }
    await s.users.syncLocalIdentity(user, "phone");
    await s.audit.record({
      action: "user_modified",
      actorId: user.id,
      actorUsername: user.email ?? phone,
      logType: "user",
      traits: { phone_changed: true },
      ip,
    });
    // A first number is no change of one: no notification (GoTrue's verify.go).
    if (oldPhone) {
      await s.mailer.notify("phone_changed", user, { Phone: phone, OldPhone: oldPhone });
    }
  }
  await s.audit.record({
    action: "login",
    actorId: user.id,
    actorUsername: user.email ?? phone,
    logType: "account",
    traits: { provider: "phone", type },
    ip,
  });
  s.events.emit("signin", { method: "otp" });
  return await s.sessions.issue(user, {
    method: "otp",
    ip,
    userAgent: meta.userAgent,
  });
}

/**
 * POST /resend with type `sms` or `phone_change`: `{message_id}` whether or
 * not a code went out (unknown number, already confirmed, no pending
 * change: nothing is sent), within the same limits (a second request within
 * SMS_MAX_FREQUENCY is a 429 either way) and in about the time a send takes,
 * so nobody learns which numbers have accounts. The id is ours, not the
 * gateway's (which is logged with "sms sent"), for the same reason.
 */
export async function resendPhoneCode(
  s: Domain,
  r: {
    type: "sms" | "phone_change";
    /** The number (E.164 digits) the request names. */
    phone?: string;
    /** phone_change named by the user's e-mail (GoTrue allows it). */
    email?: string;
  },
  meta: RequestMeta,
): Promise<{ messageId: string }> {
  const { type, email } = r;
  const started = s.sms.timing.now();
  if (email) {
    const owner = type === "phone_change" ? await s.users.findByEmail(email) : null;
    if (owner?.phone_change) {
      await s.sms.sendOtp({ userId: owner.id, phone: owner.phone_change, type });
      await s.users.update(owner.id, { phone_change_sent_at: s.clock.now() });
    } else {
      await s.sms.timing.pad(type, started);
    }
    return { messageId: crypto.randomUUID() };
  }
  const phone = r.phone!;
  let user = await s.users.findByPhone(phone);
  let to: string | null;
  if (type === "sms") {
    to = user && !user.phone_confirmed_at ? phone : null;
  } else {
    if (!user?.phone_change) user = await s.users.findByPendingPhone(phone);
    to = user?.phone_change || null;
  }
  const messageId = crypto.randomUUID();
  if (!user || !to) {
    await s.sendLimits.decoy({
      channel: "sms",
      recipient: phone,
      kind: SMS_CODE_KIND,
      intervalSec: s.config.sms.maxFrequency,
    });
    await s.sms.timing.pad(type, started);
    return { messageId };
  }
  // `sms`: the pending sign-up's code again (what the row's sign-up set, auth/confirm.ts).
  await s.sms.sendOtp({
    userId: user.id,
    phone: to,
    type,
    data: type === "sms" ? signupTokenData({}) : undefined,
  });
  await s.users.update(
    user.id,
    type === "sms"
      ? { confirmation_sent_at: s.clock.now() }
      : { phone_change_sent_at: s.clock.now() },
  );
  await s.audit.record({
    action: type === "sms" ? "user_confirmation_requested" : "user_modified",
    actorId: user.id,
    actorUsername: user.email ?? user.phone ?? "",
    logType: "user",
    traits: { channel: "sms", type },
    ip: meta.ip,
  });
  return { messageId };
}

/**
 * GET /reauthenticate for a user with a phone and no e-mail: a nonce by SMS
 * (token type `reauthentication`, recipient the user's phone), checked by
 * `s.sms.verify(["reauthentication"], user.phone, nonce)`.
 */
export async function reauthenticateByPhone(
  s: Domain,
  user: UserRow,
  meta: RequestMeta,
): Promise<void> {
  if (!user.phone) {
    throw new AuthError(
      "validation_failed",
      "Reauthentication requires an email or a phone number",
    );
  }
  await s.sms.sendUserCode(user, "reauthentication");
  await s.audit.record({
    action: "user_reauthenticate_requested",
    actorId: user.id,
    actorUsername: user.phone,
    logType: "user",
    traits: { channel: "sms" },
    ip: meta.ip,
  });
}

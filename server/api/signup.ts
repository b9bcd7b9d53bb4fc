/**
 * POST /signup: e-mail + password, phone + password, or (with
 * EXTERNAL_ANONYMOUS_USERS_ENABLED) an anonymous user.
 *
 * With autoconfirm on (MAILER_AUTOCONFIRM for e-mail, SMS_AUTOCONFIRM for
 * phone) the answer is a session; with it off, the user, and the channel's
 * confirmation (`SIGNUP_CONFIRMATIONS` below) is sent.
 *
 * Duplicates are answered by signup_duplicate.ts without telling
 * which addresses have accounts. Parallel sign-ups of one address make one
 * user: the unique index decides, the loser is treated as a duplicate.
 */
import { userCreated } from "../auth/hooks_install.ts";
import type { SignupClaim } from "../auth/confirm.ts";
import { checkPassword } from "../auth/pwned.ts";
import type { TokenSet } from "../auth/sessions.ts";
import { isUniqueViolation, normalizePhone, type UserRow, userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { clientIp, type Ctx } from "./context.ts";
import { AuthError, unprocessable } from "./errors.ts";
import { tokenSetResponse } from "./headers.ts";
import { duplicateSignup, recordFreshWork } from "./signup_duplicate.ts";
import { emailSignupConfirmation } from "./email_hooks.ts";
import { phoneSignupConfirmation } from "./phone.ts";
import { type Body, checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";

/** The channel a sign-up came through. */
export type SignupChannel = "email" | "phone";

/** What a sign-up hook gets. */
export interface SignupEvent {
  c: Ctx;
  s: Services;
  /** The user (fresh, or the existing one when `duplicate`). */
  user: UserRow;
  channel: SignupChannel;
  /** The parsed request body (code_challenge, channel, ... for the hook's own use). */
  body: Body;
  /** `redirect_to` of the request (query first, then body), unchecked. */
  redirectTo?: string;
  /**
   * True when the address already had an account: the answer is fabricated
   * whatever the hook does; a hook may e.g. resend the confirmation of a user
   * who is not confirmed yet, and must not reveal anything in its answer.
   */
  duplicate: boolean;
  /**
   * What confirming this sign-up keeps (auth/confirm.ts): put it in the
   * confirmation's token. A fresh sign-up's is `{}` (the row is its own); a
   * repeated one carries its password's hash and data, so the owner's own
   * sign-up is the one that counts once they confirm it.
   */
  signup: SignupClaim;
}

/**
 * A sign-up hook, run after the user is stored when autoconfirm is off for
 * its channel (the confirmation mail, the SMS code). It may return the
 * updated row (e.g. with confirmation_sent_at), which the answer then shows.
 * When a hook throws for a fresh user, the user is removed again, so the
 * sign-up can simply be retried, and the error is the answer.
 */
export type SignupHook = (ev: SignupEvent) => Promise<UserRow | void>;

/**
 * What confirms a sign-up, by channel, run in this order after the user is
 * stored when autoconfirm is off for the channel.
 */
export const SIGNUP_CONFIRMATIONS: Readonly<Record<SignupChannel, readonly SignupHook[]>> = {
  email: [emailSignupConfirmation],
  phone: [phoneSignupConfirmation],
};

async function anonymousSignup(c: Ctx, s: Services, body: Body): Promise<Response> {
  if (!s.config.external.anonymousUsersEnabled) {
    throw unprocessable("Anonymous sign-ins are disabled", "anonymous_provider_disabled");
  }
  const data = optObject(body, "data") ?? {};
  const user = await s.users.create({
    aud: s.config.jwt.aud,
    role: s.config.jwt.defaultGroupName || "authenticated",
    is_anonymous: true,
    raw_user_meta_data: data,
    raw_app_meta_data: { provider: "anonymous", providers: ["anonymous"] },
  });
  await s.audit.record({
    action: "user_signedup",
    actorId: user.id,
    logType: "team",
    traits: { provider: "anonymous" },
    ip: clientIp(c),
  });
  s.events.emit("signup", { method: "anonymous" });
  await userCreated(s, user, clientIp(c));
  const set = await s.sessions.issue(user, {
    method: "anonymous",
    ip: clientIp(c),
    userAgent: c.req.header("user-agent"),
  });
  return tokenSetResponse(c, set);
}

/** POST /signup. */
export async function signup(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const cfg = s.config;
  const rawEmail = optString(body, "email", 320);
  const rawPhone = optString(body, "phone", 64);
  const password = optString(body, "password", 1024);
  const data = optObject(body, "data") ?? {};
  if (cfg.disableSignup) {
    throw unprocessable("Signups not allowed for this instance", "signup_disabled");
  }
  if (!rawEmail && !rawPhone) {
    if (password) {
      throw unprocessable("Signup requires an email or phone: email or phone is required");
    }
    return await anonymousSignup(c, s, body);
  }
  if (rawEmail && rawPhone) {
    throw unprocessable("Only an email address or phone number should be provided on signup.");
  }

  let channel: SignupChannel;
  let address: string;
  if (rawEmail) {
    if (!cfg.external.emailEnabled) {
      throw unprocessable("Email signups are disabled", "email_provider_disabled");
    }
    channel = "email";
    address = checkEmail(rawEmail);
  } else {
    if (!cfg.external.phoneEnabled) {
      throw unprocessable("Phone signups are disabled", "phone_provider_disabled");
    }
    channel = "phone";
    const p = normalizePhone(rawPhone!);
    if (!p) throw unprocessable("Invalid phone number format (E.164 required): phone");
    address = p;
  }
  if (!password) throw unprocessable("Signup requires a valid password: password is required");
  await checkPassword(s, password);
  const autoconfirm = channel === "email" ? cfg.mailer.autoconfirm : cfg.sms.autoconfirm;
  const redirectTo = redirectToParam(c, body);

  // Hash first, whether or not the address is known, so both answers take as long. A client
  // that went away before its hash began gets none, and nothing is written for it.
  const hash = await s.passwords.hash(password, c.req.raw.signal);
  const now = s.clock.now();
  const find = (a: string) => channel === "email" ? s.users.findByEmail(a) : s.users.findByPhone(a);
  let user: UserRow | null = null;
  let existing = await find(address);
  const lookedUp = performance.now();
  const issueOpts = {
    method: "password",
    ip: clientIp(c),
    userAgent: c.req.header("user-agent"),
  };
  // Signed in at once, and no hook to run around the creation: the user, its identity, the
  // session and the audit entry are one statement (Sessions.signUp).
  const atOnce = autoconfirm && !s.hooks.enabled("before_user_created") &&
    !s.hooks.enabled("after_user_created");
  let set: TokenSet | null = null;
  if (!existing) {
    const fields = {
      aud: cfg.jwt.aud,
      role: cfg.jwt.defaultGroupName || "authenticated",
      email: channel === "email" ? address : undefined,
      phone: channel === "phone" ? address : undefined,
      encrypted_password: hash,
      email_confirmed_at: channel === "email" && autoconfirm ? now : undefined,
      phone_confirmed_at: channel === "phone" && autoconfirm ? now : undefined,
      raw_user_meta_data: data,
    };
    try {
      if (atOnce) {
        ({ user, set } = await s.sessions.signUp(fields, [channel], {
          ...issueOpts,
          audit: { action: "user_signedup", logType: "team", traits: { provider: channel } },
        }));
      } else {
        user = await s.users.createWithIdentities(fields, [channel]);
      }
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      existing = await find(address); // a parallel sign-up of the same address won
      if (!existing) throw e;
    }
  }

  if (!user) {
    return await duplicateSignup(
      c,
      s,
      body,
      existing!,
      channel,
      address,
      data,
      autoconfirm,
      redirectTo,
      lookedUp,
      SIGNUP_CONFIRMATIONS[channel],
      { password: hash, data },
    );
  }

  if (set) {
    s.events.emit("signup", { method: channel });
    return tokenSetResponse(c, set);
  }
  await s.audit.record({
    action: "user_signedup",
    actorId: user.id,
    actorUsername: user.email ?? user.phone ?? "",
    logType: "team",
    traits: { provider: channel },
    ip: clientIp(c),
  });
  s.events.emit("signup", { method: channel });
  await userCreated(s, user, clientIp(c));

  if (autoconfirm) return tokenSetResponse(c, await s.sessions.issue(user, issueOpts));
  try {
    for (const hook of SIGNUP_CONFIRMATIONS[channel]) {
      user = (await hook({
        c,
        s,
        user,
        channel,
        body,
        redirectTo,
        duplicate: false,
        signup: {},
      })) ?? user;
    }
  } catch (e) {
    // As if the sign-up never happened (GoTrue rolls back its transaction),
    // except when the mail server failed: the user stays, and POST /resend
    // sends the confirmation once mail works again (issue 4).
    if (!(e instanceof AuthError && e.errorCode === "email_send_failed")) {
      await s.users.delete(user.id).catch(() => {});
    }
    throw e;
  }
  const answer = userToJson(user, { identities: await s.users.listIdentities(user.id) });
  recordFreshWork(s, channel, performance.now() - lookedUp);
  return c.json(answer);
}

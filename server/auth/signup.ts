/**
 * The sign-up use case (POST /signup): e-mail + password, phone + password,
 * or an anonymous user. With autoconfirm on for the channel (MAILER_AUTOCONFIRM,
 * SMS_AUTOCONFIRM) the outcome is a session; with it off, the user, and the
 * channel's confirmation (`SIGNUP_CONFIRMATIONS`) is sent. A confirmation that
 * fails removes the fresh user again (the sign-up can simply be retried),
 * except when the mail server failed: the user stays and POST /resend sends
 * the confirmation once mail works again.
 *
 * A known address is answered by signup_duplicate.ts without telling which
 * addresses have accounts. Parallel sign-ups of one address make one user: the
 * unique index decides, the loser is treated as a duplicate.
 */
import { AuthError } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import { userCreated } from "./hooks_install.ts";
import { signupTokenData } from "./confirm.ts";
import type { PhoneCodeType } from "./phone.ts";
import { withFlowState } from "./pkce.ts";
import { verifyRedirectTo } from "./redirect.ts";
import type { TokenSet } from "./sessions.ts";
import { isUniqueViolation, type UserRow, userToJson } from "./users.ts";
import { sendActionMail } from "./action_mail.ts";
import { duplicateSignup } from "./signup_duplicate.ts";
import {
  SIGNUP_WORK,
  type SignupConfirmation,
  type SignupEvent,
  type SignupOutcome,
  type SignupRequest,
  signupTiming,
} from "./signup_request.ts";

/** By e-mail: the confirmation mail, with PKCE when the request had `code_challenge`. */
async function emailSignupConfirmation(
  { d, user, request, meta, duplicate, signup }: SignupEvent,
): Promise<UserRow | void> {
  // A repeated sign-up answers like a fresh one, in about the same time.
  const started = d.mailer.timing.now();
  if (duplicate && user.email_confirmed_at) {
    await d.mailer.timing.pad("confirmation", started);
    return;
  }
  const pkce = request.pkce;
  const sent = await withFlowState(
    d.db,
    pkce && { ...pkce, userId: user.id, authenticationMethod: "email/signup" },
    (flowStateId) =>
      sendActionMail(d, user, "confirmation", {
        redirectTo: verifyRedirectTo(d.config, request.redirectTo),
        flowStateId,
        signup,
        // A repeated sign-up's mail does not replace the pending ones: the owner's own
        // mail keeps working whatever a squatter requests meanwhile (auth/confirm.ts).
        alongside: duplicate,
      }),
  ).catch(async (e) => {
    if (duplicate) await d.mailer.timing.pad("confirmation", started);
    throw e;
  });
  await d.audit.record({
    action: "user_confirmation_requested",
    actorId: user.id,
    actorUsername: user.email ?? "",
    logType: "user",
    traits: { channel: "email" },
    ip: meta.ip,
  });
  return sent;
}

/** By phone: the confirmation code by SMS. */
async function phoneSignupConfirmation(
  { d, user, meta, duplicate, signup }: SignupEvent,
): Promise<UserRow | void> {
  if (duplicate && user.phone_confirmed_at) return;
  // The code confirms this sign-up (auth/confirm.ts); a repeated sign-up's code is sent
  // beside the pending one, so the owner's own code keeps working.
  const fresh = await d.sms.sendUserCode(
    user,
    "sms" satisfies PhoneCodeType,
    undefined,
    signupTokenData(signup),
    duplicate,
  );
  await d.audit.record({
    action: "user_confirmation_requested",
    actorId: user.id,
    actorUsername: user.phone ?? "",
    logType: "user",
    traits: { channel: "sms" },
    ip: meta.ip,
  });
  return fresh;
}

/**
 * What confirms a sign-up, by channel, run in this order after the user is
 * stored when autoconfirm is off for the channel.
 */
export const SIGNUP_CONFIRMATIONS: Readonly<
  Record<SignupRequest["channel"], readonly SignupConfirmation[]>
> = {
  email: [emailSignupConfirmation],
  phone: [phoneSignupConfirmation],
};

/** An anonymous user and its session (EXTERNAL_ANONYMOUS_USERS_ENABLED). */
export async function signUpAnonymously(
  d: Domain,
  data: Record<string, unknown>,
  meta: RequestMeta,
): Promise<TokenSet> {
  if (!d.config.external.anonymousUsersEnabled) {
    throw new AuthError("anonymous_provider_disabled", "Anonymous sign-ins are disabled");
  }
  const user = await d.users.create({
    aud: d.config.jwt.aud,
    role: d.config.jwt.defaultGroupName || "authenticated",
    is_anonymous: true,
    raw_user_meta_data: data,
    raw_app_meta_data: { provider: "anonymous", providers: ["anonymous"] },
  });
  await d.audit.record({
    action: "user_signedup",
    actorId: user.id,
    logType: "team",
    traits: { provider: "anonymous" },
    ip: meta.ip,
  });
  d.events.emit("signup", { method: "anonymous" });
  await userCreated(d, user, meta.ip);
  return await d.sessions.issue(user, {
    method: "anonymous",
    ip: meta.ip,
    userAgent: meta.userAgent,
  });
}

/** A sign-up by e-mail or phone with a password (the password's strength already checked). */
export async function signUp(
  d: Domain,
  r: SignupRequest,
  meta: RequestMeta,
): Promise<SignupOutcome> {
  const cfg = d.config;
  const { channel, address, data } = r;
  const autoconfirm = channel === "email" ? cfg.mailer.autoconfirm : cfg.sms.autoconfirm;
  // Hash first, whether or not the address is known, so both answers take as long. A client
  // that went away before its hash began gets none, and nothing is written for it.
  const hash = await d.passwords.hash(r.password, meta.signal);
  const now = d.clock.now();
  const find = (a: string) => channel === "email" ? d.users.findByEmail(a) : d.users.findByPhone(a);
  let user: UserRow | null = null;
  let existing = await find(address);
  const timing = signupTiming(d, channel);
  const lookedUp = timing.now();
  const issueOpts = { method: "password", ip: meta.ip, userAgent: meta.userAgent };
  // Signed in at once, and no hook to run around the creation: the user, its identity, the
  // session and the audit entry are one statement (Sessions.signUp).
  const atOnce = autoconfirm && !d.hooks.enabled("before_user_created") &&
    !d.hooks.enabled("after_user_created");
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
        ({ user, set } = await d.sessions.signUp(fields, [channel], {
          ...issueOpts,
          audit: { action: "user_signedup", logType: "team", traits: { provider: channel } },
        }));
      } else {
        user = await d.users.createWithIdentities(fields, [channel]);
      }
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      existing = await find(address); // a parallel sign-up of the same address won
      if (!existing) throw e;
    }
  }

  if (!user) {
    return await duplicateSignup(d, r, existing!, meta, {
      autoconfirm,
      lookedUp,
      confirmations: SIGNUP_CONFIRMATIONS[channel],
      signup: { password: hash, data },
    });
  }

  if (set) {
    d.events.emit("signup", { method: channel });
    return { set };
  }
  await d.audit.record({
    action: "user_signedup",
    actorId: user.id,
    actorUsername: user.email ?? user.phone ?? "",
    logType: "team",
    traits: { provider: channel },
    ip: meta.ip,
  });
  d.events.emit("signup", { method: channel });
  await userCreated(d, user, meta.ip);

  if (autoconfirm) return { set: await d.sessions.issue(user, issueOpts) };
  try {
    for (const confirm of SIGNUP_CONFIRMATIONS[channel]) {
      user = (await confirm({
        d,
        user,
        channel,
        request: r,
        meta,
        duplicate: false,
        signup: {},
      })) ?? user;
    }
  } catch (e) {
    // As if the sign-up never happened (GoTrue rolls back its transaction),
    // except when the mail server failed: the user stays, and POST /resend
    // sends the confirmation once mail works again (issue 4).
    if (!(e instanceof AuthError && e.errorCode === "email_send_failed")) {
      await d.users.delete(user.id).catch(() => {});
    }
    throw e;
  }
  const answer = userToJson(user, { identities: await d.users.listIdentities(user.id) });
  timing.observe(SIGNUP_WORK, timing.now() - lookedUp);
  return { user: answer };
}

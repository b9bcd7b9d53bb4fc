/**
 * POST /magiclink {email} (the older endpoint; /otp is preferred): a mail
 * with a sign-in link and a code. An unknown address becomes a user and gets
 * the confirmation mail instead (answer `{}` either way); with sign-ups
 * disabled it is refused with 422 signup_disabled, as GoTrue does. Magic
 * links to one address: one per SMTP_LINK_FREQUENCY (60 s).
 */
import { userCreated } from "../auth/hooks_install.ts";
import { readPkceParams, withFlowState } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { isUniqueViolation, type UserRow } from "../auth/users.ts";
import { sendActionMail } from "../auth/action_mail.ts";
import type { Services } from "../services.ts";
import { clientIp, type Ctx } from "./context.ts";
import { ApiError, unprocessable } from "./errors.ts";
import { type Body, checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";

/** 422 email_provider_disabled unless EXTERNAL_EMAIL_ENABLED. */
export function requireEmailEnabled(s: Services): void {
  if (!s.config.external.emailEnabled) {
    throw unprocessable("Email logins are disabled", "email_provider_disabled");
  }
}

/**
 * Sends a sign-in mail for `body.email`: a magic link and code to a confirmed
 * user, the confirmation mail to a new or unconfirmed one. `createUser`
 * false: an unknown address gets nothing and a 422 otp_disabled, as in GoTrue.
 */
export async function sendLoginMail(
  c: Ctx,
  s: Services,
  body: Body,
  createUser: boolean,
): Promise<Response> {
  requireEmailEnabled(s);
  const email = checkEmail(optString(body, "email", 320) ?? "");
  const pkce = readPkceParams(body);
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  const data = optObject(body, "data") ?? {};
  let user: UserRow | null = await s.users.findByEmail(email);
  let created = false;
  if (!user) {
    // As GoTrue: create_user false refuses an unknown address (422
    // otp_disabled), and so does a server with sign-ups off (422
    // signup_disabled); nothing is sent either way.
    if (!createUser) throw new ApiError(422, "otp_disabled", "Signups not allowed for otp");
    if (s.config.disableSignup) {
      throw new ApiError(422, "signup_disabled", "Signups not allowed for this instance");
    }
    try {
      user = await s.users.createWithIdentities(
        {
          aud: s.config.jwt.aud,
          role: s.config.jwt.defaultGroupName || "authenticated",
          email,
          raw_user_meta_data: data,
        },
        ["email"],
      );
      created = true;
      await s.audit.record({
        action: "user_signedup",
        actorId: user.id,
        actorUsername: email,
        logType: "team",
        traits: { provider: "email" },
        ip: clientIp(c),
      });
      s.events.emit("signup", { method: "email" });
      await userCreated(s, user, clientIp(c));
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      user = await s.users.findByEmail(email);
      if (!user) throw e;
    }
  }
  const action = user.email_confirmed_at || s.config.mailer.autoconfirm
    ? "magiclink"
    : "confirmation";
  try {
    // One interval for every sign-in mail, whichever kind it is, so a 429's
    // wait tells nothing about the address. A refused mail removes its flow state again.
    await withFlowState(
      s.db,
      pkce && {
        ...pkce,
        userId: user.id,
        authenticationMethod: action === "magiclink" ? "magiclink" : "email/signup",
      },
      (flowStateId) =>
        sendActionMail(s, user!, action, {
          redirectTo,
          flowStateId,
          intervalSec: s.config.smtp.linkFrequency,
          // The mail of the sign-up this request made; an unconfirmed account someone else
          // made gets a plain confirmation, which keeps nothing of theirs (auth/confirm.ts).
          signup: created ? {} : undefined,
        }),
    );
  } catch (e) {
    // A request that fails leaves no user behind (its flow state goes with it); a retry
    // creates it again.
    if (created) await s.users.delete(user.id).catch(() => {});
    throw e;
  }
  await s.audit.record({
    action: action === "magiclink" ? "user_recovery_requested" : "user_confirmation_requested",
    actorId: user.id,
    actorUsername: email,
    logType: "user",
    traits: { channel: "email", mail: action },
    ip: clientIp(c),
  });
  return c.json({});
}

/** POST /magiclink. */
export async function magiclink(c: Ctx, s: Services): Promise<Response> {
  return await sendLoginMail(c, s, await readBody(c), true);
}

/**
 * The e-mail side of POST /signup and PUT /user, which list these in
 * signup.ts (`SIGNUP_CONFIRMATIONS`) and user.ts (`USER_UPDATE_STEPS`):
 * - POST /signup (autoconfirm off): the confirmation mail, with PKCE when the
 *   body has `code_challenge`; a repeated sign-up of an unconfirmed address
 *   sends it again within the limits (a confirmed one gets nothing).
 * - PUT /user `email`: the e-mail change (a mail to the new address, and to
 *   the current one too when MAILER_SECURE_EMAIL_CHANGE_ENABLED; at once only
 *   for an anonymous user with MAILER_AUTOCONFIRM); `password` with
 *   SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION needs `nonce` from
 *   GET /reauthenticate; the password-changed notification mail.
 */
import { readPkceParams, withFlowState } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { emailChangeLimitKey, sendActionMail, sendEmailChangeMails } from "../auth/action_mail.ts";
import type { UserRow } from "../auth/users.ts";
import { clientIp } from "./context.ts";
import { ApiError } from "./errors.ts";
import { checkEmail, optString, redirectToParam } from "./input.ts";
import { requireEmailEnabled } from "./magiclink.ts";
import type { SignupEvent } from "./signup.ts";
import { checkCurrentPassword, type UserUpdate } from "./user.ts";

/** PUT /user `password` with SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: `nonce` is needed. */
export async function nonceStep(u: UserUpdate): Promise<void> {
  const { s, user } = u;
  if (u.password === undefined || !s.config.security.updatePasswordRequireReauthentication) return;
  const nonce = optString(u.body, "nonce", 64);
  if (!nonce) {
    throw new ApiError(400, "reauthentication_needed", "Password update requires reauthentication");
  }
  // The nonce is used up only once every step accepted the request (the password's
  // strength and same_password included): a typo does not cost it (a new one may be
  // SMTP_MAX_FREQUENCY away).
  await checkCurrentPassword(u);
  const pending = await s.otp.pending(user.id, "reauthentication");
  const refused = () =>
    new ApiError(
      422,
      "reauthentication_not_valid",
      "Requires reauthentication: the nonce is invalid or has expired",
    );
  if (!pending) throw refused();
  // Used up once every step has accepted the request, before any other effect (a code
  // sent): a request refused for another reason keeps the nonce.
  u.effects.unshift(async () => {
    const ok = await s.otp.verifyCode(["reauthentication"], pending.relates_to, nonce).then(
      () => true,
      () => false,
    );
    if (!ok) throw refused();
  });
}

/** PUT /user: the password-changed notification mail, once the password changed. */
export function passwordNoticeStep(u: UserUpdate): Promise<void> {
  u.after.push(async (written) => {
    if (u.passwordChanged) await u.s.mailer.notify("password_changed", written);
  });
  return Promise.resolve();
}

/** PUT /user `email`: the e-mail change. */
export async function emailChangeStep(u: UserUpdate): Promise<void> {
  const { s, user, c } = u;
  const raw = optString(u.body, "email", 320);
  if (!raw) return;
  const email = checkEmail(raw);
  if (email === user.email) return;
  requireEmailEnabled(s);
  // GoTrue's order (user.go): a taken address is 422 before any limit is looked at; taken
  // means another user's address or an address of another user's identity.
  if (await s.users.emailTakenByOther(email, user.id)) {
    throw new ApiError(
      422,
      "email_exists",
      "A user with this email address has already been registered",
    );
  }
  const oldEmail = user.email;
  // Only an anonymous user gets an address at once with MAILER_AUTOCONFIRM (like a sign-up)
  // and becomes permanent; a permanent user always proves the new address, or anyone
  // signed in could claim an address they do not own (GoTrue's user.go).
  if (s.config.mailer.autoconfirm && user.is_anonymous) {
    u.fields.email = email;
    u.fields.email_confirmed_at = s.clock.now();
    u.fields.email_change = null;
    u.fields.is_anonymous = false;
    u.after.push(async (written) => {
      await s.users.syncLocalIdentity(written, "email");
      if (oldEmail) {
        await s.mailer.notify("email_changed", { ...written, email: oldEmail }, {
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
  await s.sendLimits.check({
    channel: "email",
    recipient: emailChangeLimitKey(user.id),
    kind: "email_change",
    intervalSec: s.config.smtp.maxFrequency,
  });
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, u.body));
  // With `code_challenge` the confirming link continues a PKCE flow (?code=), as in GoTrue.
  const pkce = readPkceParams(u.body);
  u.fields.email_change = email;
  u.fields.email_change_sent_at = s.clock.now();
  u.fields.email_change_confirm_status = 0;
  u.after.push(async (written) => {
    await withFlowState(
      s.db,
      pkce && { ...pkce, userId: written.id, authenticationMethod: "email_change" },
      async (flowStateId) => {
        await sendEmailChangeMails(s, written, { redirectTo, flowStateId });
      },
    );
    await s.audit.record({
      action: "user_modified",
      actorId: written.id,
      actorUsername: oldEmail ?? "",
      logType: "user",
      traits: { email_change_requested: email },
      ip: clientIp(c),
    });
  });
}

/**
 * POST /signup by e-mail with autoconfirm off: the confirmation mail, with
 * PKCE when the body has `code_challenge`.
 */
export async function emailSignupConfirmation(
  { c, s, user, body, redirectTo, duplicate, signup }: SignupEvent,
): Promise<UserRow | void> {
  // A repeated sign-up answers like a fresh one, in about the same time.
  const started = s.mailer.timing.now();
  if (duplicate && user.email_confirmed_at) {
    await s.mailer.timing.pad("confirmation", started);
    return;
  }
  const pkce = readPkceParams(body);
  const sent = await withFlowState(
    s.db,
    pkce && { ...pkce, userId: user.id, authenticationMethod: "email/signup" },
    (flowStateId) =>
      sendActionMail(s, user, "confirmation", {
        redirectTo: verifyRedirectTo(s.config, redirectTo),
        flowStateId,
        signup,
        // A repeated sign-up's mail does not replace the pending ones: the owner's own
        // mail keeps working whatever a squatter requests meanwhile (auth/confirm.ts).
        alongside: duplicate,
      }),
  ).catch(async (e) => {
    if (duplicate) await s.mailer.timing.pad("confirmation", started);
    throw e;
  });
  await s.audit.record({
    action: "user_confirmation_requested",
    actorId: user.id,
    actorUsername: user.email ?? "",
    logType: "user",
    traits: { channel: "email" },
    ip: clientIp(c),
  });
  return sent;
}

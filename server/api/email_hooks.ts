/**
 * The e-mail side of endpoints other groups own, plugged in through their
 * hooks:
 * - POST /signup (autoconfirm off): the confirmation mail, with PKCE when the
 *   body has `code_challenge`; a repeated sign-up of an unconfirmed address
 *   sends it again within the limits (a confirmed one gets nothing).
 * - POST /token?grant_type=pkce {auth_code, code_verifier}: the PKCE exchange.
 * - PUT /user `email`: the e-mail change (a mail to the new address, and to
 *   the current one too when MAILER_SECURE_EMAIL_CHANGE_ENABLED; at once only
 *   for an anonymous user with MAILER_AUTOCONFIRM); `password` with
 *   SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION needs `nonce` from
 *   GET /reauthenticate; the password-changed notification mail.
 */
import type { Hono } from "../../deps.ts";
import { exchangeAuthCode, readPkceParams, withFlowState } from "../auth/pkce.ts";
import { checkPassword } from "../auth/pwned.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { sendActionMail } from "../mail/flows.ts";
import type { Services } from "../services.ts";
import { type AppEnv, clientIp } from "./context.ts";
import { ApiError } from "./errors.ts";
import { checkEmail, optString, redirectToParam } from "./input.ts";
import { requireEmailEnabled } from "./magiclink.ts";
import { onSignup } from "./signup.ts";
import { onGrant } from "./token.ts";
import { checkCurrentPassword, onUserUpdate, type UserUpdate } from "./user.ts";

async function nonceStep(u: UserUpdate): Promise<void> {
  const { s, user } = u;
  if (u.password === undefined || !s.config.security.updatePasswordRequireReauthentication) return;
  const nonce = optString(u.body, "nonce", 64);
  if (!nonce) {
    throw new ApiError(400, "reauthentication_needed", "Password update requires reauthentication");
  }
  // The nonce is used up below, before the password step runs: refuse a
  // password that step would refuse first, so a typo does not cost the nonce
  // (a new one may be SMTP_MAX_FREQUENCY away).
  if (u.password !== "") await checkPassword(s, u.password);
  await checkCurrentPassword(u);
  if (
    u.password && user.encrypted_password &&
    await s.passwords.verify(u.password, user.encrypted_password)
  ) {
    throw new ApiError(
      422,
      "same_password",
      "New password should be different from the old password.",
    );
  }
  const pending = await s.otp.pending(user.id, "reauthentication");
  const ok = pending &&
    await s.otp.verifyCode(["reauthentication"], pending.relates_to, nonce).then(
      () => true,
      () => false,
    );
  if (!ok) {
    throw new ApiError(
      422,
      "reauthentication_not_valid",
      "Requires reauthentication: the nonce is invalid or has expired",
    );
  }
}

function passwordNoticeStep(u: UserUpdate): Promise<void> {
  u.after.push(async (written) => {
    if (u.passwordChanged) await u.s.mailer.notify("password_changed", written);
  });
  return Promise.resolve();
}

async function emailChangeStep(u: UserUpdate): Promise<void> {
  const { s, user, c } = u;
  const raw = optString(u.body, "email", 320);
  if (!raw) return;
  const email = checkEmail(raw);
  if (email === user.email) return;
  requireEmailEnabled(s);
  const other = await s.users.findByEmail(email);
  if (other && other.id !== user.id) {
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
  const both = s.config.mailer.secureEmailChangeEnabled && !!oldEmail;
  const interval = s.config.smtp.maxFrequency;
  await s.sendLimits.check({
    channel: "email",
    recipient: email,
    kind: "email_change",
    intervalSec: interval,
  });
  if (both) {
    await s.sendLimits.check({
      channel: "email",
      recipient: oldEmail!,
      kind: "email_change",
      intervalSec: interval,
    });
  }
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
        const opts = { redirectTo, flowStateId };
        const sent = await sendActionMail(s, written, "email_change_new", opts);
        if (both) await sendActionMail(s, sent, "email_change_current", opts);
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

/** Registers the e-mail hooks of /signup, /token and PUT /user. */
export function emailHooks(_app: Hono<AppEnv>, s: Services): void {
  onSignup(s, "email", async ({ c, s, user, body, redirectTo, duplicate, signup }) => {
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
  });

  onGrant(s, "pkce", async (c, body, s) => {
    const set = await exchangeAuthCode(
      s,
      optString(body, "auth_code", 256) ?? "",
      optString(body, "code_verifier", 256) ?? "",
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
    return c.json(set);
  });

  onUserUpdate(s, nonceStep);
  onUserUpdate(s, emailChangeStep);
  onUserUpdate(s, passwordNoticeStep);
}

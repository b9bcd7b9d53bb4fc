/**
 * The e-mail use cases of the sign-in endpoints: the sign-in mail of
 * /magiclink and /otp, the recovery mail of /recover, the mails /resend sends
 * again, the nonce of GET /reauthenticate, and the invitation of /invite. Each
 * sends within the send limits (auth/action_mail.ts) and writes its audit
 * entry; an answer that sends nothing for an unknown address takes as long and
 * meets the same limits as one that sends (`withoutMail`).
 */
import { AuthError } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import { sendActionMail, sendEmailChangeMails, withoutMail } from "./action_mail.ts";
import { userCreated } from "./hooks_install.ts";
import { createFlowState, type PkceParams, withFlowState } from "./pkce.ts";
import { reauthenticateByPhone } from "./phone_flows.ts";
import { isUniqueViolation, type UserRow } from "./users.ts";

/** A request that mails a link, as the handler parsed it. */
export interface MailRequest {
  /** The address, checked and canonical. */
  email: string;
  /** The checked redirect target. */
  redirectTo: string;
  pkce?: PkceParams;
}

/**
 * Sends a sign-in mail (/magiclink, /otp by e-mail): a magic link and code to
 * a confirmed user, the confirmation mail to a new or unconfirmed one.
 * `createUser` false: an unknown address gets nothing and 422 otp_disabled,
 * as in GoTrue; with sign-ups off, 422 signup_disabled.
 */
export async function sendSignInMail(
  d: Domain,
  r: MailRequest & { createUser: boolean; data: Record<string, unknown> },
  meta: RequestMeta,
): Promise<void> {
  const { email, pkce, redirectTo } = r;
  let user: UserRow | null = await d.users.findByEmail(email);
  let created = false;
  if (!user) {
    // As GoTrue: create_user false refuses an unknown address (422
    // otp_disabled), and so does a server with sign-ups off (422
    // signup_disabled); nothing is sent either way.
    if (!r.createUser) throw new AuthError("otp_disabled", "Signups not allowed for otp");
    if (d.config.disableSignup) {
      throw new AuthError("signup_disabled", "Signups not allowed for this instance");
    }
    try {
      user = await d.users.createWithIdentities(
        {
          aud: d.config.jwt.aud,
          role: d.config.jwt.defaultGroupName || "authenticated",
          email,
          raw_user_meta_data: r.data,
        },
        ["email"],
      );
      created = true;
      await d.audit.record({
        action: "user_signedup",
        actorId: user.id,
        actorUsername: email,
        logType: "team",
        traits: { provider: "email" },
        ip: meta.ip,
      });
      d.events.emit("signup", { method: "email" });
      await userCreated(d, user, meta.ip);
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      user = await d.users.findByEmail(email);
      if (!user) throw e;
    }
  }
  const action = user.email_confirmed_at || d.config.mailer.autoconfirm
    ? "magiclink"
    : "confirmation";
  try {
    // One interval for every sign-in mail, whichever kind it is, so a 429's
    // wait tells nothing about the address. A refused mail removes its flow state again.
    await withFlowState(
      d.db,
      pkce && {
        ...pkce,
        userId: user.id,
        authenticationMethod: action === "magiclink" ? "magiclink" : "email/signup",
      },
      (flowStateId) =>
        sendActionMail(d, user!, action, {
          redirectTo,
          flowStateId,
          intervalSec: d.config.smtp.linkFrequency,
          // The mail of the sign-up this request made; an unconfirmed account someone else
          // made gets a plain confirmation, which keeps nothing of theirs (auth/confirm.ts).
          signup: created ? {} : undefined,
        }),
    );
  } catch (e) {
    // A request that fails leaves no user behind (its flow state goes with it); a retry
    // creates it again.
    if (created) await d.users.delete(user.id).catch(() => {});
    throw e;
  }
  await d.audit.record({
    action: action === "magiclink" ? "user_recovery_requested" : "user_confirmation_requested",
    actorId: user.id,
    actorUsername: email,
    logType: "user",
    traits: { channel: "email", mail: action },
    ip: meta.ip,
  });
}

/** POST /recover: the password-reset mail, or for an unknown address the same limits and time. */
export async function sendRecovery(d: Domain, r: MailRequest, meta: RequestMeta): Promise<void> {
  const { email, pkce, redirectTo } = r;
  const user = await d.users.findByEmail(email);
  if (!user) {
    await withoutMail(d, "recovery", email); // same limits, same time, no mail
    return;
  }
  await withFlowState(
    d.db,
    pkce && { ...pkce, userId: user.id, authenticationMethod: "recovery" },
    (flowStateId) => sendActionMail(d, user, "recovery", { redirectTo, flowStateId }),
  );
  await d.audit.record({
    action: "user_recovery_requested",
    actorId: user.id,
    actorUsername: email,
    logType: "user",
    ip: meta.ip,
  });
}

async function findEmailChange(d: Domain, email: string): Promise<UserRow | null> {
  const byCurrent = await d.users.findByEmail(email);
  if (byCurrent?.email_change) return byCurrent;
  return await d.users.findByPendingEmail(email);
}

/**
 * POST /resend of `signup` or `email_change` by e-mail address, or of
 * `email_change` by the phone of its user: the pending mail again, or, when
 * there is nothing to resend, the same limits and time without a mail.
 */
export async function resendMail(
  d: Domain,
  r: {
    type: "signup" | "email_change";
    email?: string;
    /** E.164 digits: an e-mail change pending on the user with this phone. */
    phone?: string;
    redirectTo: string;
    pkce?: PkceParams;
  },
  meta: RequestMeta,
): Promise<void> {
  const { type, pkce, redirectTo } = r;
  if (r.phone !== undefined) {
    // GoTrue: an e-mail change pending on the user with this phone is sent again.
    const user = type === "email_change" ? await d.users.findByPhone(r.phone) : null;
    if (!user?.email_change) {
      await withoutMail(d, "email_change_new", r.phone);
      return;
    }
    await sendEmailChangeMails(d, user, { redirectTo });
    return;
  }
  const email = r.email!;
  if (type === "signup") {
    const user = await d.users.findByEmail(email);
    if (!user || user.email_confirmed_at) {
      await withoutMail(d, "confirmation", email); // same limits, same time, no mail
      return;
    }
    const flow = pkce
      ? await createFlowState(d.db, {
        ...pkce,
        userId: user.id,
        authenticationMethod: "email/signup",
      })
      : undefined;
    // The pending sign-up's confirmation again (auth/confirm.ts: what the row's sign-up set).
    await sendActionMail(d, user, "confirmation", {
      redirectTo,
      flowStateId: flow?.id,
      signup: {},
    });
    await d.audit.record({
      action: "user_confirmation_requested",
      actorId: user.id,
      actorUsername: email,
      logType: "user",
      traits: { channel: "email", resend: true },
      ip: meta.ip,
    });
    return;
  }
  const user = await findEmailChange(d, email);
  if (!user?.email_change) {
    const started = d.mailer.timing.now();
    await withoutMail(d, "email_change_new", email);
    if (d.config.mailer.secureEmailChangeEnabled) {
      await d.mailer.timing.pad("email_change_current", started);
    }
    return;
  }
  // GoTrue sends the change mails again for the user (SMTP_MAX_FREQUENCY per user, as
  // PUT /user); the record of confirmed sides starts again before the new links exist
  // (sendEmailChangeMails). With `code_challenge` the new links continue a PKCE flow
  // (?code=), as GoTrue's resend.
  await withFlowState(
    d.db,
    pkce && { ...pkce, userId: user.id, authenticationMethod: "email_change" },
    async (flowStateId) => {
      await sendEmailChangeMails(d, user!, { redirectTo, flowStateId });
    },
  );
}

/**
 * GET /reauthenticate: a nonce to the user's e-mail, or by SMS when they have
 * only a phone. A user with neither is refused (400, GoTrue's reauthenticate.go).
 */
export async function sendReauthentication(
  d: Domain,
  user: UserRow,
  meta: RequestMeta,
): Promise<void> {
  if (!user.email && !user.phone) {
    throw new AuthError(
      "validation_failed",
      "Reauthentication requires the user to have an email or a phone number",
      { situation: "parameter" },
    );
  }
  if (!user.email) return await reauthenticateByPhone(d, user, meta);
  await sendActionMail(d, user, "reauthentication");
  await d.audit.record({
    action: "user_reauthenticate_requested",
    actorId: user.id,
    actorUsername: user.email,
    logType: "user",
    traits: { channel: "email" },
    ip: meta.ip,
  });
}

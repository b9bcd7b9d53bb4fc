/**
 * POST /resend {type, email | phone}: sends the pending mail again, within
 * the send limits: `signup` (the confirmation of an unconfirmed address),
 * `email_change` (the change mails, to the new address and, with secure
 * change, to the current one). `sms` and `phone_change` belong to the phone
 * side (api/phone.ts). The answer is `{message_id}` whether or not there
 * was anything to send, so nobody learns which addresses have accounts.
 */
import { createFlowState, readPkceParams, withFlowState } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import type { UserRow } from "../auth/users.ts";
import { sendActionMail, sendEmailChangeMails, withoutMail } from "../auth/action_mail.ts";
import type { Services } from "../services.ts";
import { clientIp, type Ctx } from "./context.ts";
import { badRequest } from "./errors.ts";
import { type Body, checkEmail, optString, readBody, redirectToParam } from "./input.ts";
import { resendByPhone } from "./phone.ts";
import { parsePhone } from "../auth/phone.ts";

async function findEmailChange(s: Services, email: string): Promise<UserRow | null> {
  const byCurrent = await s.users.findByEmail(email);
  if (byCurrent?.email_change) return byCurrent;
  return await s.users.findByPendingEmail(email);
}

/**
 * Validates as GoTrue's ResendConfirmationParams.Validate, in its order,
 * and returns the address the request names.
 */
function readResend(s: Services, body: Body): { type: string; email?: string; phone?: string } {
  const type = optString(body, "type", 32) ?? "";
  if (!["signup", "email_change", "sms", "phone_change"].includes(type)) {
    throw badRequest("Missing one of these types: signup, email_change, sms, phone_change");
  }
  if (type === "signup" || type === "email_change") readPkceParams(body);
  const email = optString(body, "email", 320);
  const phone = optString(body, "phone", 64);
  if (!email && type === "signup") throw badRequest("Type provided requires an email address");
  if (!phone && type === "sms") throw badRequest("Type provided requires a phone number");
  if (email && phone) {
    throw badRequest("Only an email address or phone number should be provided.");
  }
  if (email) {
    if (!s.config.external.emailEnabled) {
      throw badRequest("Email logins are disabled", "email_provider_disabled");
    }
    return { type, email: checkEmail(email) };
  }
  if (phone) return { type, phone };
  throw badRequest("Missing email address or phone number");
}

/** POST /resend. */
export async function resend(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const { type, email: address, phone } = readResend(s, body);
  if (type === "sms" || type === "phone_change") {
    return await resendByPhone(c, s, body, type, address);
  }
  const pkce = readPkceParams(body);
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  const messageId = crypto.randomUUID();
  if (phone) {
    // GoTrue: an e-mail change pending on the user with this phone is sent again.
    const p = parsePhone(phone);
    const user = type === "email_change" ? await s.users.findByPhone(p) : null;
    if (!user?.email_change) {
      await withoutMail(s, "email_change_new", p);
      return c.json({ message_id: messageId });
    }
    await sendEmailChangeMails(s, user, { redirectTo });
    return c.json({ message_id: messageId });
  }
  const email = address!;
  if (type === "signup") {
    const user = await s.users.findByEmail(email);
    if (!user || user.email_confirmed_at) {
      await withoutMail(s, "confirmation", email); // same limits, same time, no mail
      return c.json({ message_id: messageId });
    }
    const flow = pkce
      ? await createFlowState(s.db, {
        ...pkce,
        userId: user.id,
        authenticationMethod: "email/signup",
      })
      : undefined;
    // The pending sign-up's confirmation again (auth/confirm.ts: what the row's sign-up set).
    await sendActionMail(s, user, "confirmation", {
      redirectTo,
      flowStateId: flow?.id,
      signup: {},
    });
    await s.audit.record({
      action: "user_confirmation_requested",
      actorId: user.id,
      actorUsername: email,
      logType: "user",
      traits: { channel: "email", resend: true },
      ip: clientIp(c),
    });
    return c.json({ message_id: messageId });
  }
  const user = await findEmailChange(s, email);
  if (!user?.email_change) {
    const started = s.mailer.timing.now();
    await withoutMail(s, "email_change_new", email);
    if (s.config.mailer.secureEmailChangeEnabled) {
      await s.mailer.timing.pad("email_change_current", started);
    }
    return c.json({ message_id: messageId });
  }
  // GoTrue sends the change mails again for the user (SMTP_MAX_FREQUENCY per user, as
  // PUT /user); the record of confirmed sides starts again before the new links exist
  // (sendEmailChangeMails). With `code_challenge` the new links continue a PKCE flow
  // (?code=), as GoTrue's resend.
  await withFlowState(
    s.db,
    pkce && { ...pkce, userId: user.id, authenticationMethod: "email_change" },
    async (flowStateId) => {
      await sendEmailChangeMails(s, user!, { redirectTo, flowStateId });
    },
  );
  return c.json({ message_id: messageId });
}

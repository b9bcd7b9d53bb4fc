/**
 * POST /resend {type, email | phone}: sends the pending mail again, within
 * the send limits: `signup` (the confirmation of an unconfirmed address),
 * `email_change` (the change mails, to the new address and, with secure
 * change, to the current one). `sms` and `phone_change` belong to the phone
 * side (api/phone.ts). The answer is `{message_id}` whether or not there
 * was anything to send, so nobody learns which addresses have accounts.
 */
import { resendMail } from "../auth/mail_flows.ts";
import { parsePhone } from "../auth/phone.ts";
import { readPkceParams } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { badRequest } from "./errors.ts";
import { type Body, checkEmail, optString, readBody, redirectToParam } from "./input.ts";
import { requestMeta } from "./meta.ts";
import { resendByPhone } from "./phone.ts";

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
  await resendMail(s, {
    type: type as "signup" | "email_change",
    email: phone ? undefined : address,
    phone: phone ? parsePhone(phone) : undefined,
    redirectTo,
    pkce,
  }, requestMeta(c));
  return c.json({ message_id: crypto.randomUUID() });
}

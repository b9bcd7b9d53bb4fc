/**
 * The phone side of the endpoints: what /otp, /verify, /resend and
 * /reauthenticate read when the request names a phone. The use cases are
 * auth/phone_flows.ts (the sign-up's code: auth/signup.ts; PUT /user's phone:
 * auth/user_update.ts).
 */
import { parsePhone } from "../auth/phone.ts";
import { resendPhoneCode, sendPhoneOtp, verifyPhoneCode } from "../auth/phone_flows.ts";
import type { TokenSet } from "../auth/sessions.ts";
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { ApiError, badRequest } from "./errors.ts";
import { type Body, optBool, optObject, optString } from "./input.ts";
import { requestMeta } from "./meta.ts";

/** 400 phone_provider_disabled unless EXTERNAL_PHONE_ENABLED (the phone routes' status). */
export function requirePhoneEnabled(s: Services, what = "Phone logins"): void {
  if (!s.config.external.phoneEnabled) {
    throw new ApiError(400, "phone_provider_disabled", `${what} are disabled`);
  }
}

/**
 * `channel` may be "sms" (the default) or, in GoTrue, "whatsapp" with
 * Twilio; we send SMS only, so anything else is GoTrue's 400 for a provider
 * without WhatsApp.
 */
export function checkChannel(body: Body): void {
  const ch = body.channel;
  if (ch === undefined || ch === null || ch === "" || ch === "sms") return;
  throw badRequest(
    "Invalid channel, supported values are 'sms' or 'whatsapp'. 'whatsapp' is only supported if Twilio or Twilio Verify is used as the provider.",
  );
}

/** POST /otp with a phone: `{message_id}` once the code is sent. */
export async function otpByPhone(c: Ctx, s: Services, body: Body): Promise<Response> {
  requirePhoneEnabled(s);
  const phone = parsePhone(body.phone);
  checkChannel(body);
  const { messageId } = await sendPhoneOtp(s, {
    phone,
    createUser: optBool(body, "create_user") ?? true,
    data: optObject(body, "data") ?? {},
  }, requestMeta(c));
  return c.json({ message_id: messageId });
}

/** POST /verify with type `sms` or `phone_change`: the session. */
export async function verifyByPhone(
  c: Ctx,
  s: Services,
  body: Body,
  type: "sms" | "phone_change",
): Promise<TokenSet> {
  const phone = parsePhone(body.phone);
  const token = optString(body, "token", 64) ?? "";
  if (!token) throw badRequest("token is required");
  return await verifyPhoneCode(s, { phone, token, type }, requestMeta(c));
}

/** POST /resend with type `sms` or `phone_change`: `{message_id}` whether or not a code went out. */
export async function resendByPhone(
  c: Ctx,
  s: Services,
  body: Body,
  type: "sms" | "phone_change",
  /** phone_change named by the user's e-mail (GoTrue allows it). */
  email?: string,
): Promise<Response> {
  requirePhoneEnabled(s);
  const phone = email ? undefined : parsePhone(body.phone);
  const { messageId } = await resendPhoneCode(s, { type, phone, email }, requestMeta(c));
  return c.json({ message_id: messageId });
}

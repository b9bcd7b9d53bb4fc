/**
 * POST /otp: `{email}` sends a mail with a sign-in link AND a 6-digit code
 * (MAILER_OTP_LENGTH) in the same message; `{phone}` sends an SMS code (the
 * phone side, api/phone.ts). `create_user` (default true)
 * governs whether an unknown address becomes a user; when it is false an
 * unknown address gets nothing and 422 otp_disabled (GoTrue's answer).
 */
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { badRequest } from "./errors.ts";
import { optBool, optString, readBody } from "./input.ts";
import { sendLoginMail } from "./magiclink.ts";
import { otpByPhone } from "./phone.ts";

/** POST /otp. */
export async function otp(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const email = optString(body, "email", 320);
  const phone = optString(body, "phone", 64);
  if (email && phone) {
    throw badRequest("Only an email address or phone number should be provided");
  }
  if (phone) return await otpByPhone(c, s, body);
  if (!email) throw badRequest("email or phone is required");
  return await sendLoginMail(c, s, body, optBool(body, "create_user") ?? true);
}

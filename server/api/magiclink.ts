/**
 * POST /magiclink {email} (the older endpoint; /otp is preferred): a mail
 * with a sign-in link and a code. An unknown address becomes a user and gets
 * the confirmation mail instead (answer `{}` either way); with sign-ups
 * disabled it is refused with 422 signup_disabled, as GoTrue does. Magic
 * links to one address: one per SMTP_LINK_FREQUENCY (60 s).
 */
import { sendSignInMail } from "../auth/mail_flows.ts";
import { readPkceParams } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { unprocessable } from "./errors.ts";
import { type Body, checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";
import { requestMeta } from "./meta.ts";

/** 422 email_provider_disabled unless EXTERNAL_EMAIL_ENABLED. */
export function requireEmailEnabled(s: Services): void {
  if (!s.config.external.emailEnabled) {
    throw unprocessable("Email logins are disabled", "email_provider_disabled");
  }
}

/** Reads a sign-in mail request (/magiclink, /otp by e-mail) and sends it. */
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
  await sendSignInMail(s, { email, pkce, redirectTo, createUser, data }, requestMeta(c));
  return c.json({});
}

/** POST /magiclink. */
export async function magiclink(c: Ctx, s: Services): Promise<Response> {
  return await sendLoginMail(c, s, await readBody(c), true);
}

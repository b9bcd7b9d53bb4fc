/**
 * GET /reauthenticate: sends the signed-in user a nonce (a 6-digit code) to
 * their e-mail, or by SMS when they have only a phone (the phone side,
 * api/phone.ts). With SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION
 * a password change through PUT /user then needs `nonce` (api/email_hooks.ts).
 */
import { sendActionMail } from "../auth/action_mail.ts";
import type { Services } from "../services.ts";
import { callerOf, clientIp, type Ctx } from "./context.ts";
import { badRequest } from "./errors.ts";
import { reauthenticateByPhone } from "./phone.ts";

/** GET /reauthenticate. */
export async function reauthenticate(c: Ctx, s: Services): Promise<Response> {
  const { user } = callerOf(c);
  if (!user.email && !user.phone) {
    // GoTrue's answer (reauthenticate.go), e.g. for an anonymous user.
    throw badRequest("Reauthentication requires the user to have an email or a phone number");
  }
  if (!user.email) {
    await reauthenticateByPhone(c, s, user);
    return c.json({});
  }
  await sendActionMail(s, user, "reauthentication");
  await s.audit.record({
    action: "user_reauthenticate_requested",
    actorId: user.id,
    actorUsername: user.email,
    logType: "user",
    traits: { channel: "email" },
    ip: clientIp(c),
  });
  return c.json({});
}

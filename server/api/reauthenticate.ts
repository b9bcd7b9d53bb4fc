/**
 * GET /reauthenticate: sends the signed-in user a nonce (a 6-digit code) to
 * their e-mail, or by SMS when they have only a phone
 * (auth/mail_flows.ts `sendReauthentication`). With
 * SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION a password change through
 * PUT /user then needs `nonce` (auth/user_update.ts).
 */
import { sendReauthentication } from "../auth/mail_flows.ts";
import type { Services } from "../services.ts";
import { callerOf, type Ctx } from "./context.ts";
import { requestMeta } from "./meta.ts";

/** GET /reauthenticate. */
export async function reauthenticate(c: Ctx, s: Services): Promise<Response> {
  await sendReauthentication(s, callerOf(c).user, requestMeta(c));
  return c.json({});
}

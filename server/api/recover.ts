/**
 * POST /recover {email}: a mail with a password-reset link and code (one per
 * SMTP_LINK_FREQUENCY, 60 s). The link signs the user in (type `recovery`);
 * the app then sets a new password with PUT /user. An unknown address gets
 * no mail and the same `{}` answer. PKCE: `code_challenge` makes the link
 * land on redirect_to with `?code=`.
 */
import { readPkceParams, withFlowState } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { sendActionMail, withoutMail } from "../auth/action_mail.ts";
import type { Services } from "../services.ts";
import { clientIp, type Ctx } from "./context.ts";
import { checkEmail, optString, readBody, redirectToParam } from "./input.ts";
import { requireEmailEnabled } from "./magiclink.ts";

/** POST /recover. */
export async function recover(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  requireEmailEnabled(s);
  const email = checkEmail(optString(body, "email", 320) ?? "");
  const pkce = readPkceParams(body);
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  const user = await s.users.findByEmail(email);
  if (!user) {
    await withoutMail(s, "recovery", email); // same limits, same time, no mail
    return c.json({});
  }
  await withFlowState(
    s.db,
    pkce && { ...pkce, userId: user.id, authenticationMethod: "recovery" },
    (flowStateId) => sendActionMail(s, user, "recovery", { redirectTo, flowStateId }),
  );
  await s.audit.record({
    action: "user_recovery_requested",
    actorId: user.id,
    actorUsername: email,
    logType: "user",
    ip: clientIp(c),
  });
  return c.json({});
}

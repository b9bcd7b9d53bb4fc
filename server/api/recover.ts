/**
 * POST /recover {email}: a mail with a password-reset link and code (one per
 * SMTP_LINK_FREQUENCY, 60 s). The link signs the user in (type `recovery`);
 * the app then sets a new password with PUT /user. An unknown address gets
 * no mail and the same `{}` answer. PKCE: `code_challenge` makes the link
 * land on redirect_to with `?code=`. The use case: auth/mail_flows.ts.
 */
import { sendRecovery } from "../auth/mail_flows.ts";
import { readPkceParams } from "../auth/pkce.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { checkEmail, optString, readBody, redirectToParam } from "./input.ts";
import { requireEmailEnabled } from "./magiclink.ts";
import { requestMeta } from "./meta.ts";

/** POST /recover. */
export async function recover(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  requireEmailEnabled(s);
  const email = checkEmail(optString(body, "email", 320) ?? "");
  const pkce = readPkceParams(body);
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  await sendRecovery(s, { email, pkce, redirectTo }, requestMeta(c));
  return c.json({});
}

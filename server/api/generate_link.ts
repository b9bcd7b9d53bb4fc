/**
 * POST /admin/generate_link {type, email, password?, data?, new_email?,
 * redirect_to | redirectTo}: an admin gets the link a mail would carry,
 * without any mail being sent (auth/admin_links.ts).
 *
 * Answer: the user's fields plus `action_link` (…/verify?token=…&type=…&
 * redirect_to=…), `email_otp` (the code), `hashed_token` (the link's token,
 * for POST /verify `token_hash`), `verification_type` (the requested type,
 * `signup` for a new magic-link user) and `redirect_to`.
 */
import { generateLink as linkFor, LINK_TYPES, type LinkType } from "../auth/admin_links.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { badRequest } from "./errors.ts";
import { checkEmail, optObject, optString, readBody, redirectToParam, reqString } from "./input.ts";
import { requestMeta } from "./meta.ts";

/** POST /admin/generate_link. */
export async function generateLink(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const type = reqString(body, "type", 32) as LinkType;
  if (!LINK_TYPES.includes(type)) throw badRequest(`type must be one of ${LINK_TYPES.join(", ")}`);
  const email = checkEmail(optString(body, "email", 320) ?? "");
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  const data = optObject(body, "data");
  const change = type === "email_change_current" || type === "email_change_new";
  if (type === "email_change_current" && !s.config.mailer.secureEmailChangeEnabled) {
    throw badRequest("Enable secure email change to generate link for current email");
  }
  const { user, link, verificationType } = await linkFor(s, {
    type,
    email,
    redirectTo,
    data,
    password: type === "signup" ? optString(body, "password", 1024) : undefined,
    newEmail: change ? checkEmail(reqString(body, "new_email", 320)) : undefined,
  }, requestMeta(c));
  return c.json({
    ...userToJson(user, { identities: await s.users.listIdentities(user.id) }),
    action_link: link.actionLink,
    email_otp: link.emailOtp,
    hashed_token: link.hashedToken,
    verification_type: verificationType,
    redirect_to: link.redirectTo,
  });
}

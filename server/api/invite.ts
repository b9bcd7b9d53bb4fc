/**
 * POST /invite {email, data}: the service role or an admin role
 * (JWT_ADMIN_ROLES) invites an address (auth/invite.ts): the user is created
 * (invited_at) and gets the invite mail, whose link signs them in (type
 * `invite`) so they can set a password with PUT /user. An address that is
 * already confirmed is 422 email_exists; an invited, unconfirmed one is
 * invited again.
 */
import { actorOf } from "../auth/admin_flows.ts";
import { inviteUser } from "../auth/invite.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { claimsOf, type Ctx } from "./context.ts";
import { checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";
import { requestMeta } from "./meta.ts";

/** POST /invite. */
export async function invite(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  const body = await readBody(c);
  const email = checkEmail(optString(body, "email", 320) ?? "");
  const data = optObject(body, "data") ?? {};
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  const user = await inviteUser(s, { email, data, redirectTo }, actorOf(claims), requestMeta(c));
  return c.json(userToJson(user, { identities: await s.users.listIdentities(user.id) }));
}

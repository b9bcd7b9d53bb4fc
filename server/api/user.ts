/**
 * PUT /user: reads the request and hands it to the use case
 * (auth/user_update.ts, where its steps are); answers the stored user.
 * GET /user is user_profile.ts.
 */
import { parsePhone } from "../auth/phone.ts";
import { readPkceParams } from "../auth/pkce.ts";
import { updateOwnUser } from "../auth/user_update.ts";
import type { UserRow } from "../auth/users.ts";
import { userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { callerOf, type Ctx } from "./context.ts";
import { checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";
import { requestMeta } from "./meta.ts";
import { requirePhoneEnabled } from "./phone.ts";

/** The user as GET /user, PUT /user and the admin API answer it. */
export async function userResponse(s: Services, user: UserRow): Promise<Record<string, unknown>> {
  return userToJson(user, {
    identities: await s.users.listIdentities(user.id),
    factors: await s.mfa.factorsJson(user.id),
  });
}

/** PUT /user. */
export async function updateUser(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  const body = await readBody(c);
  const rawPhone = body.phone;
  const phone = rawPhone === undefined || rawPhone === null || rawPhone === ""
    ? undefined
    : parsePhone(rawPhone);
  if (phone !== undefined && phone !== caller.user.phone) requirePhoneEnabled(s, "Phone logins");
  const rawEmail = optString(body, "email", 320);
  const email = rawEmail ? checkEmail(rawEmail) : undefined;
  const user = await updateOwnUser(s, caller.user, caller.session, {
    email,
    phone,
    password: optString(body, "password", 1024),
    currentPassword: optString(body, "current_password", 1024) || undefined,
    nonce: optString(body, "nonce", 64) || undefined,
    data: optObject(body, "data"),
    redirectTo: redirectToParam(c, body),
    pkce: email !== undefined ? readPkceParams(body) : undefined,
  }, requestMeta(c));
  return c.json(await userResponse(s, user));
}

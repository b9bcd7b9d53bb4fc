/**
 * POST /invite {email, data}: the service role or an admin role
 * (JWT_ADMIN_ROLES) invites an address; the user is created (invited_at) and
 * gets the invite mail, whose link signs them in (type `invite`) so they can
 * set a password with PUT /user. An address that is already confirmed is
 * 422 email_exists; an invited, unconfirmed one is invited again.
 */
import { userCreated } from "../auth/hooks_install.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { isUniqueViolation, type UserRow, userToJson } from "../auth/users.ts";
import { sendActionMail } from "../auth/action_mail.ts";
import type { Services } from "../services.ts";
import { claimsOf, clientIp, type Ctx } from "./context.ts";
import { ApiError } from "./errors.ts";
import { checkEmail, optObject, optString, readBody, redirectToParam } from "./input.ts";
import { actorOf } from "./admin.ts";

/** Finds or creates the invited user (422 email_exists when already confirmed). */
export async function invitedUser(
  s: Services,
  email: string,
  data: Record<string, unknown>,
): Promise<{ user: UserRow; created: boolean }> {
  const existing = await s.users.findByEmail(email);
  if (existing?.email_confirmed_at) {
    throw new ApiError(
      422,
      "email_exists",
      "A user with this email address has already been registered",
    );
  }
  if (existing) {
    const user = await s.users.update(existing.id, { invited_at: s.clock.now() }) ?? existing;
    return { user, created: false };
  }
  try {
    const user = await s.users.createWithIdentities(
      {
        aud: s.config.jwt.aud,
        role: s.config.jwt.defaultGroupName || "authenticated",
        email,
        invited_at: s.clock.now(),
        raw_user_meta_data: data,
      },
      ["email"],
    );
    return { user, created: true };
  } catch (e) {
    if (isUniqueViolation(e)) return await invitedUser(s, email, data);
    throw e;
  }
}

/** POST /invite. */
export async function invite(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  const body = await readBody(c);
  const email = checkEmail(optString(body, "email", 320) ?? "");
  const data = optObject(body, "data") ?? {};
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  const before = await s.users.findByEmail(email);
  const { user, created } = await invitedUser(s, email, data);
  let sent;
  try {
    // An invite that made the account confirms what the invite set; one to an account
    // somebody else made keeps nothing of theirs (auth/confirm.ts).
    sent = await sendActionMail(s, user, "invite", {
      redirectTo,
      signup: created ? {} : undefined,
    });
  } catch (e) {
    // A failed invitation leaves nothing behind: the user it created goes, a re-invited
    // user's invited_at is what it was.
    if (created) await s.users.delete(user.id).catch(() => {});
    else if (before?.id === user.id) {
      await s.users.update(user.id, { invited_at: before.invited_at }).catch(() => {});
    }
    throw e;
  }
  await s.audit.record({
    action: "user_invited",
    ...actorOf(claims),
    logType: "team",
    traits: { user_id: user.id, user_email: email },
    ip: clientIp(c),
  });
  if (created) {
    s.events.emit("signup", { method: "invite" });
    await userCreated(s, user, clientIp(c));
  }
  return c.json(userToJson(sent, { identities: await s.users.listIdentities(user.id) }));
}

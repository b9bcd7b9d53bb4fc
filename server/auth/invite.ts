/**
 * Invitations (POST /invite, and the invite link of POST /admin/generate_link):
 * the user is created (invited_at) or invited again, and gets the invite
 * mail, whose link signs them in (type `invite`). An address that is already
 * confirmed is 422 email_exists.
 */
import { AuthError } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import type { Actor } from "./admin_flows.ts";
import { sendActionMail } from "./action_mail.ts";
import { userCreated } from "./hooks_install.ts";
import { isUniqueViolation, type UserRow } from "./users.ts";

/** Finds or creates the invited user (422 email_exists when already confirmed). */
export async function invitedUser(
  s: Domain,
  email: string,
  data: Record<string, unknown>,
): Promise<{ user: UserRow; created: boolean }> {
  const existing = await s.users.findByEmail(email);
  if (existing?.email_confirmed_at) {
    throw new AuthError(
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

/** POST /invite: invites `email`; returns the invited user as stored after the mail. */
export async function inviteUser(
  s: Domain,
  r: { email: string; data: Record<string, unknown>; redirectTo: string },
  actor: Actor,
  meta: RequestMeta,
): Promise<UserRow> {
  const { email } = r;
  const before = await s.users.findByEmail(email);
  const { user, created } = await invitedUser(s, email, r.data);
  let sent;
  try {
    // An invite that made the account confirms what the invite set; one to an account
    // somebody else made keeps nothing of theirs (auth/confirm.ts).
    sent = await sendActionMail(s, user, "invite", {
      redirectTo: r.redirectTo,
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
    ...actor,
    logType: "team",
    traits: { user_id: user.id, user_email: email },
    ip: meta.ip,
  });
  if (created) {
    s.events.emit("signup", { method: "invite" });
    await userCreated(s, user, meta.ip);
  }
  return sent;
}

/**
 * POST /admin/generate_link's use case: the link a mail would carry, without
 * any mail being sent (docs/server/email.md). `signup` creates the user with
 * `password` and `data`, `invite` invites (auth/invite.ts), `magiclink` makes
 * an unknown address a user with a `signup` link (as GoTrue), `recovery` needs
 * the user, `email_change_current` / `email_change_new` start the change to
 * `new_email` with the admin vouching for it.
 */
import { AuthError } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import type { SignupClaim } from "./confirm.ts";
import { vouchedByAdmin } from "./email_change.ts";
import { type EmailAction, generateActionLink } from "./action_mail.ts";
import { userCreated } from "./hooks_install.ts";
import { invitedUser } from "./invite.ts";
import { checkPassword } from "./pwned.ts";
import { isUniqueViolation, type UserRow } from "./users.ts";

export const LINK_TYPES = [
  "signup",
  "invite",
  "magiclink",
  "recovery",
  "email_change_current",
  "email_change_new",
] as const;
export type LinkType = typeof LINK_TYPES[number];

function emailExists(): AuthError {
  return new AuthError(
    "email_exists",
    "A user with this email address has already been registered",
  );
}

async function signupUser(
  s: Domain,
  email: string,
  password: string | undefined,
  data: Record<string, unknown> | undefined,
): Promise<UserRow> {
  const existing = await s.users.findByEmail(email);
  if (existing?.email_confirmed_at) throw emailExists();
  if (password !== undefined) await checkPassword(s, password);
  const hash = password ? await s.passwords.hash(password) : undefined;
  if (existing) {
    return await s.users.update(existing.id, {
      encrypted_password: hash,
      raw_user_meta_data: data ? { ...existing.raw_user_meta_data, ...data } : undefined,
    }) ?? existing;
  }
  try {
    return await s.users.createWithIdentities(
      {
        aud: s.config.jwt.aud,
        role: s.config.jwt.defaultGroupName || "authenticated",
        email,
        encrypted_password: hash,
        raw_user_meta_data: data ?? {},
      },
      ["email"],
    );
  } catch (e) {
    if (isUniqueViolation(e)) throw emailExists();
    throw e;
  }
}

/** The link of POST /admin/generate_link for the user it is about. */
export async function generateLink(
  s: Domain,
  r: {
    type: LinkType;
    email: string;
    redirectTo: string;
    data?: Record<string, unknown>;
    password?: string;
    /** The new address of the e-mail change types. */
    newEmail?: string;
  },
  meta: RequestMeta,
): Promise<
  { user: UserRow; link: Awaited<ReturnType<typeof generateActionLink>>; verificationType: string }
> {
  const { type, email, redirectTo, data } = r;
  let user: UserRow | null;
  let action: EmailAction;
  let verificationType: string = type;
  let signup: SignupClaim | undefined;
  let created = false;
  switch (type) {
    case "signup": {
      const password = r.password;
      const existed = !!await s.users.findByEmail(email);
      user = await signupUser(s, email, password, data);
      created = !existed;
      action = "confirmation";
      // The link confirms this sign-up (what the admin set), not an unconfirmed
      // account's password the admin did not replace (auth/confirm.ts).
      if (password || !existed) signup = {};
      break;
    }
    case "invite": {
      const invited = await invitedUser(s, email, data ?? {});
      user = invited.user;
      action = "invite";
      created = invited.created;
      if (invited.created) signup = {};
      break;
    }
    case "magiclink":
      user = await s.users.findByEmail(email);
      action = "magiclink";
      if (!user) {
        user = await signupUser(s, email, undefined, data);
        created = true;
        action = "confirmation";
        verificationType = "signup";
        signup = {};
      }
      break;
    case "recovery":
      user = await s.users.findByEmail(email);
      if (!user) throw new AuthError("user_not_found", "User with this email not found");
      action = type;
      break;
    default: {
      user = await s.users.findByEmail(email);
      if (!user) throw new AuthError("user_not_found", "User with this email not found");
      const newEmail = r.newEmail!;
      if (newEmail === user.email) {
        throw new AuthError("validation_failed", "new_email is the current address");
      }
      const other = await s.users.findByEmail(newEmail);
      if (other && other.id !== user.id) throw emailExists();
      // The admin vouches for the change: one verified link completes it.
      user = await s.users.update(user.id, {
        email_change: newEmail,
        email_change_sent_at: s.clock.now(),
        email_change_confirm_status: vouchedByAdmin(type),
      }) ?? user;
      action = type;
    }
  }
  const link = await generateActionLink(s, user, action, { redirectTo, signup });
  if (created) await userCreated(s, user, meta.ip); // GoTrue's mail.go, after the link
  return { user, link, verificationType };
}

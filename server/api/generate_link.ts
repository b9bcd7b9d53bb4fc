/**
 * POST /admin/generate_link {type, email, password?, data?, new_email?,
 * redirect_to | redirectTo}: an admin gets the link a mail would carry,
 * without any mail being sent. Types (docs/server/email.md): `signup` (creates the user
 * with `password` and `data`), `invite`, `magiclink` (an unknown address
 * becomes a user and gets a `signup` link, as in GoTrue), `recovery` (the
 * user must exist), `email_change_current` (only with secure e-mail change)
 * and `email_change_new` (`new_email`).
 *
 * Answer: the user's fields plus `action_link` (…/verify?token=…&type=…&
 * redirect_to=…), `email_otp` (the code), `hashed_token` (the link's token,
 * for POST /verify `token_hash`), `verification_type` (the requested type,
 * `signup` for a new magic-link user) and `redirect_to`.
 */
import type { SignupClaim } from "../auth/confirm.ts";
import { checkPassword } from "../auth/pwned.ts";
import { vouchedByAdmin } from "../auth/email_change.ts";
import { verifyRedirectTo } from "../auth/redirect.ts";
import { isUniqueViolation, type UserRow, userToJson } from "../auth/users.ts";
import { type EmailAction, generateActionLink } from "../auth/action_mail.ts";
import type { Services } from "../services.ts";
import { userCreated } from "../auth/hooks_install.ts";
import { clientIp, type Ctx } from "./context.ts";
import { ApiError, badRequest, unprocessable } from "./errors.ts";
import { checkEmail, optObject, optString, readBody, redirectToParam, reqString } from "./input.ts";
import { invitedUser } from "./invite.ts";

const TYPES = [
  "signup",
  "invite",
  "magiclink",
  "recovery",
  "email_change_current",
  "email_change_new",
] as const;
type LinkType = typeof TYPES[number];

function emailExists(): ApiError {
  return new ApiError(
    422,
    "email_exists",
    "A user with this email address has already been registered",
  );
}

async function signupUser(
  s: Services,
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

/** POST /admin/generate_link. */
export async function generateLink(c: Ctx, s: Services): Promise<Response> {
  const body = await readBody(c);
  const type = reqString(body, "type", 32) as LinkType;
  if (!TYPES.includes(type)) throw badRequest(`type must be one of ${TYPES.join(", ")}`);
  const email = checkEmail(optString(body, "email", 320) ?? "");
  const redirectTo = verifyRedirectTo(s.config, redirectToParam(c, body));
  const data = optObject(body, "data");
  let user: UserRow | null;
  let action: EmailAction;
  let verificationType: string = type;
  let signup: SignupClaim | undefined;
  let created = false;
  switch (type) {
    case "signup": {
      const password = optString(body, "password", 1024);
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
      if (!user) throw new ApiError(404, "user_not_found", "User with this email not found");
      action = type;
      break;
    default: {
      if (type === "email_change_current" && !s.config.mailer.secureEmailChangeEnabled) {
        throw badRequest("Enable secure email change to generate link for current email");
      }
      user = await s.users.findByEmail(email);
      if (!user) throw new ApiError(404, "user_not_found", "User with this email not found");
      const newEmail = checkEmail(reqString(body, "new_email", 320));
      if (newEmail === user.email) throw unprocessable("new_email is the current address");
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
  if (created) await userCreated(s, user, clientIp(c)); // GoTrue's mail.go, after the link
  return c.json({
    ...userToJson(user, { identities: await s.users.listIdentities(user.id) }),
    action_link: link.actionLink,
    email_otp: link.emailOtp,
    hashed_token: link.hashedToken,
    verification_type: verificationType,
    redirect_to: link.redirectTo,
  });
}

/**
 * Connects the enabled auth hooks (auth/hooks.ts) to the domain at start-up:
 * the access-token claims (Sessions), the MFA code check (MfaChallenges).
 * The password verification attempt is asked by the password grant itself
 * (`passwordAttempt` below), the send hooks by the mailer and SMS service,
 * before_user_created by Users.create, after_user_created by the routes
 * that create users (`userCreated` below).
 */
import { AuthError } from "./errors.ts";
import type { Domain } from "./deps.ts";
import { Hooks } from "./hooks.ts";
import {
  attemptDecision,
  customizeClaims,
  DEFAULT_MFA_REJECTION,
  DEFAULT_PASSWORD_REJECTION,
} from "./hook_outputs.ts";
import { type UserRow, userToJson } from "./users.ts";
import type { MailKind } from "../config/mod.ts";

/** GoTrue's `email_action_type` of each mail. */
const EMAIL_ACTION_TYPES: Partial<Record<MailKind, string>> = {
  confirmation: "signup",
  invite: "invite",
  recovery: "recovery",
  magic_link: "magiclink",
  email_change: "email_change",
  reauthentication: "reauthentication",
};

async function userJson(s: Domain, user: UserRow | null): Promise<Record<string, unknown>> {
  if (!user) return {};
  return userToJson(user, { identities: await s.users.listIdentities(user.id) });
}

export { Hooks };

/** Wires the enabled hooks into the services. */
export function installHooks(s: Domain): void {
  const hooks = s.hooks;
  // A hook that fails or answers nonsense leaves an entry naming it and what was wrong.
  hooks.onProblem = (r) =>
    s.audit.record({ action: "hook_failed", logType: "hook", traits: { ...r } });
  if (hooks.enabled("custom_access_token")) {
    s.sessions.customizeClaims = (user, session, claims, tx) =>
      customizeClaims(
        hooks,
        user.id,
        claims,
        session.amr[session.amr.length - 1]?.method ?? "",
        tx,
      );
  }
  if (hooks.enabled("send_email")) {
    s.mailer.sendHook = async (req, to, vars) => {
      const user = req.userId ? await s.users.findById(req.userId) : await s.users.findByEmail(to);
      await hooks.invoke("send_email", {
        user: await userJson(s, user),
        email_data: {
          token: vars.Token ?? "",
          token_hash: vars.TokenHash ?? "",
          redirect_to: vars.RedirectTo ?? "",
          email_action_type: EMAIL_ACTION_TYPES[req.kind] ?? req.kind,
          site_url: vars.SiteURL ?? s.config.siteUrl,
          token_new: "",
          token_hash_new: "",
          // ours: each address of an e-mail change gets its own call, naming it
          email: to,
          ...(vars.NewEmail ? { new_email: vars.NewEmail } : {}),
          ...(vars.Provider ? { provider: vars.Provider } : {}),
          ...(vars.FactorType ? { factor_type: vars.FactorType } : {}),
        },
      });
    };
  }
  if (hooks.enabled("send_sms")) {
    s.sms.sendHook = async (phone, code, kind) => {
      await hooks.invoke("send_sms", {
        user: await userJson(s, await s.users.findByPhone(phone)),
        sms: { otp: code, phone, sms_type: kind },
      });
    };
  }
  if (hooks.enabled("before_user_created")) {
    s.users.beforeCreate = async (user, tx) => {
      await hooks.invoke("before_user_created", { user }, "", tx);
    };
  }
  if (hooks.enabled("mfa_verification_attempt")) {
    s.mfa.challenges.onAttempt = async (factor, valid, ip) => {
      const out = await hooks.invoke("mfa_verification_attempt", {
        user_id: factor.user_id,
        factor_id: factor.id,
        factor_type: factor.factor_type,
        valid,
      }, ip);
      const d = attemptDecision(hooks, "mfa_verification_attempt", out, DEFAULT_MFA_REJECTION);
      if (!d.reject) return;
      // GoTrue signs the user out everywhere when the hook rejects an MFA attempt.
      await s.sessions.endAll(factor.user_id);
      throw new AuthError("mfa_verification_rejected", d.message, { situation: "hook" });
    };
  }
}

/**
 * The password verification attempt hook, for a sign-in whose user exists:
 * a rejection answers 400 invalid_credentials with the hook's message (and
 * ends the user's sessions when it asks to).
 */
export async function passwordAttempt(
  s: Domain,
  user: UserRow,
  valid: boolean,
  ip: string,
): Promise<void> {
  if (!s.hooks.enabled("password_verification_attempt")) return;
  const out = await s.hooks.invoke("password_verification_attempt", {
    user_id: user.id,
    valid,
  }, ip);
  const d = attemptDecision(
    s.hooks,
    "password_verification_attempt",
    out,
    DEFAULT_PASSWORD_REJECTION,
  );
  if (!d.reject) return;
  if (d.logout) await s.sessions.endAll(user.id);
  throw new AuthError("invalid_credentials", d.message);
}

/**
 * The after_user_created hook, once a new user is stored (committed), with
 * the user as GoTrue sends it; its error answer fails the request, though
 * the user stays (as in GoTrue). Not for users an admin creates.
 */
export async function userCreated(s: Domain, user: UserRow, ip = ""): Promise<void> {
  if (!s.hooks.enabled("after_user_created")) return;
  await s.hooks.invoke("after_user_created", { user: await userJson(s, user) }, ip);
}

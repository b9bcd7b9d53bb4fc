/**
 * The admin users API's use cases (GoTrue's admin.go): create, update and
 * delete a user, end a user's sessions, each audited with the admin as actor.
 * The handlers (api/admin.ts, api/admin_sessions.ts) read the request.
 */
import { AuthError, invalid, uniqueViolationAnswer } from "./errors.ts";
import type { Domain, RequestMeta } from "./deps.ts";
import { softDeleteUser, updateUserAsAdmin } from "./admin_users.ts";
import { confirmDepsOf, planConfirmation } from "./confirm.ts";
import { checkObjectBounds, mergeMetadata } from "./metadata.ts";
import { checkPassword } from "./pwned.ts";
import { isUniqueViolation, type LocalProvider, type UserFields, type UserRow } from "./users.ts";

/** The admin body, checked. */
export interface AdminUserParams {
  id?: string;
  email?: string;
  phone?: string;
  password?: string;
  /** `password` as sent ("" included): an update checks its strength, a creation does not. */
  passwordSent?: string;
  passwordHash?: string;
  emailConfirm?: boolean;
  phoneConfirm?: boolean;
  userMetadata?: Record<string, unknown>;
  appMetadata?: Record<string, unknown>;
  role?: string;
  /** undefined: unchanged; null: unban; a Date: banned until then. */
  bannedUntil?: Date | null;
}

/** The admin who made a request, for the audit log. */
export interface Actor {
  actorId: string;
  actorUsername: string;
}

/** The admin who made a request: their id and, as GoTrue records it, their e-mail. */
export function actorOf(claims: { sub?: unknown; email?: unknown }): Actor {
  return {
    actorId: typeof claims.sub === "string" ? claims.sub : "",
    actorUsername: typeof claims.email === "string" ? claims.email : "",
  };
}

function notFound(): AuthError {
  return new AuthError("user_not_found", "User not found");
}

/** Which unique index a violation hit (or the check before the write found), as GoTrue's error. */
export function conflict(e: unknown): AuthError {
  const answer = uniqueViolationAnswer(e);
  if (answer) return answer;
  const text = (e as Error).message ?? "";
  if (/email/.test(text)) {
    return new AuthError(
      "email_exists",
      "A user with this email address has already been registered",
    );
  }
  if (/phone/.test(text)) {
    return new AuthError(
      "phone_exists",
      "A user with this phone number has already been registered",
    );
  }
  return new AuthError("user_already_exists", "A user with this id already exists");
}

/** The columns an update with these params writes to `user`. */
export function adminUpdateFields(
  user: UserRow,
  p: AdminUserParams,
  hash: string | undefined,
  now: Date,
): UserFields {
  const f: UserFields = {};
  if (p.role !== undefined) f.role = p.role;
  if (p.email !== undefined && p.email !== user.email) f.email = p.email;
  if (p.phone !== undefined && p.phone !== user.phone) f.phone = p.phone;
  if (p.emailConfirm && !user.email_confirmed_at && (p.email ?? user.email)) {
    f.email_confirmed_at = now;
  }
  if (p.phoneConfirm && !user.phone_confirmed_at && (p.phone ?? user.phone)) {
    f.phone_confirmed_at = now;
  }
  // GoTrue's admin update: a confirmed address makes an anonymous user permanent.
  if (user.is_anonymous && (f.email_confirmed_at || f.phone_confirmed_at)) f.is_anonymous = false;
  if (hash !== undefined) f.encrypted_password = hash;
  if (p.userMetadata) {
    f.raw_user_meta_data = mergeMetadata(user.raw_user_meta_data ?? {}, p.userMetadata);
    checkObjectBounds("user_metadata", f.raw_user_meta_data);
  }
  if (p.appMetadata) {
    const { provider: _p, providers: _ps, ...rest } = p.appMetadata;
    f.raw_app_meta_data = mergeMetadata(user.raw_app_meta_data ?? {}, rest);
    checkObjectBounds("app_metadata", f.raw_app_meta_data);
  }
  if (p.bannedUntil !== undefined) f.banned_until = p.bannedUntil;
  return f;
}

/** POST /admin/users: the user the admin described (422 when an address or the id is taken). */
export async function createUserAsAdmin(
  s: Domain,
  p: AdminUserParams,
  actor: Actor,
  meta: RequestMeta,
): Promise<UserRow> {
  if (!p.email && !p.phone) {
    throw invalid("Cannot create a user without either an email or phone", "parameter");
  }
  if (p.email && await s.users.findByEmail(p.email)) throw conflict(new Error("email"));
  if (p.phone && await s.users.findByPhone(p.phone)) throw conflict(new Error("phone"));
  if (p.password && new TextEncoder().encode(p.password).length > 72) {
    // bcrypt reads 72 bytes; GoTrue answers its ErrPasswordTooLong with this 400.
    throw invalid("Password cannot be longer than 72 bytes", "parameter");
  }
  const hash = p.passwordHash ?? (p.password ? await s.passwords.hash(p.password) : undefined);
  const now = s.clock.now();
  const providers: LocalProvider[] = [];
  if (p.email) providers.push("email");
  if (p.phone) providers.push("phone");
  let user: UserRow;
  try {
    user = await s.users.createWithIdentities(
      {
        id: p.id,
        aud: s.config.jwt.aud,
        role: p.role || s.config.jwt.defaultGroupName || "authenticated",
        email: p.email,
        phone: p.phone,
        encrypted_password: hash,
        email_confirmed_at: p.email && p.emailConfirm ? now : undefined,
        phone_confirmed_at: p.phone && p.phoneConfirm ? now : undefined,
        raw_user_meta_data: p.userMetadata ?? {},
        raw_app_meta_data: p.appMetadata ?? {},
        banned_until: p.bannedUntil ?? undefined,
      },
      providers,
      undefined,
      { hooks: false }, // GoTrue's before_user_created is not asked for an admin's user
    );
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(e);
    throw e;
  }
  await s.audit.record({
    action: "user_signedup",
    ...actor,
    logType: "team",
    traits: { user_id: user.id, user_email: user.email ?? "", user_phone: user.phone ?? "" },
    ip: meta.ip,
  });
  s.events.emit("signup", { method: "admin" });
  return user;
}

/** PUT /admin/users/<id>: applies the admin's change to `user`; returns the stored row. */
export async function updateUserAsAdminRequest(
  s: Domain,
  user: UserRow,
  p: AdminUserParams,
  actor: Actor,
  meta: RequestMeta,
): Promise<UserRow> {
  // GoTrue checks the strength of a password an admin sets on an existing user
  // ("" included), not of one given at creation (the admin vouches for it).
  if (p.passwordSent !== undefined) await checkPassword(s, p.passwordSent);
  const now = s.clock.now();
  const hash = p.passwordHash ?? (p.password ? await s.passwords.hash(p.password) : undefined);
  // The columns to write over a given state of the user row.
  const build = (u: UserRow) => {
    const fields = adminUpdateFields(u, p, hash, now);
    // The admin vouches for the address (GoTrue): the account stays as signed up. With
    // SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN, confirming an unproven account follows the
    // one rule of auth/confirm.ts instead: only the password and metadata sent with the
    // confirmation stay.
    const confirming = (["email", "phone"] as const).filter((ch) =>
      fields[`${ch}_confirmed_at`] !== undefined
    );
    const plan = confirming.length && s.config.security.adminConfirmResetsUnproven
      ? planConfirmation({
        ...u,
        email: fields.email ?? u.email,
        phone: fields.phone ?? u.phone,
      }, {
        channels: [...confirming],
        signup: null,
        password: hash,
        data: p.userMetadata,
        keepProviders: ["email", "phone"],
        now,
      })
      : null;
    if (plan?.reset) Object.assign(fields, plan.fields);
    return { fields, plan };
  };
  let { fields, plan } = build(user);
  // A ban takes effect at once: the user's sessions and refresh tokens end with it.
  const banning = fields.banned_until instanceof Date && fields.banned_until > now;
  let updated = user;
  if (Object.keys(fields).length) {
    try {
      // Merged over the row as it is once locked, so concurrent updates of one user each
      // land (metadata merges included), as they would one after the other.
      updated = await updateUserAsAdmin(confirmDepsOf(s), user.id, (fresh) => {
        ({ fields, plan } = build(fresh));
        return { fields, keepProviders: plan?.reset ? plan.reset.keepProviders : undefined };
      }, banning) ?? (() => {
        throw notFound();
      })();
    } catch (e) {
      if (isUniqueViolation(e)) throw conflict(e);
      throw e;
    }
    if (fields.encrypted_password !== undefined) {
      // A new password set by an admin ends the user's sessions, as a user's own change does.
      await s.sessions.logout(user.id, undefined, "global");
    }
    await s.audit.record({
      action: "user_modified",
      ...actor,
      logType: "user",
      traits: {
        user_id: user.id,
        user_email: updated.email ?? "",
        user_phone: updated.phone ?? "",
      },
      ip: meta.ip,
    });
  }
  return updated;
}

/** DELETE /admin/users/<id>: the user goes (`soft`: the row stays, its addresses free). */
export async function deleteUserAsAdmin(
  s: Domain,
  id: string,
  soft: boolean,
  actor: Actor,
  meta: RequestMeta,
): Promise<void> {
  const user = await s.users.findById(id);
  if (!user) throw notFound();
  if (soft) {
    // The row stays (audit, foreign keys); the addresses become free again.
    await softDeleteUser(confirmDepsOf(s), id, s.clock.now());
  } else {
    await s.users.delete(id);
  }
  await s.audit.record({
    action: "user_deleted",
    ...actor,
    logType: "team",
    traits: { user_id: id, user_email: user.email ?? "", user_phone: user.phone ?? "", soft },
    ip: meta.ip,
  });
}

/** DELETE /admin/users/<id>/sessions: signs the user out everywhere. */
export async function endSessionsAsAdmin(
  s: Domain,
  user: UserRow,
  actor: Actor,
  meta: RequestMeta,
): Promise<void> {
  await s.sessions.endAll(user.id);
  await s.audit.record({
    action: "logout",
    ...actor,
    logType: "account",
    traits: { user_id: user.id, user_email: user.email ?? "", scope: "global" },
    ip: meta.ip,
  });
}

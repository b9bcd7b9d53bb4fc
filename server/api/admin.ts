/**
 * The admin users API (GoTrue's admin.go and what @supabase/auth-js's
 * GoTrueAdminApi calls): list (paged), create, get, update, delete, and
 * `POST /admin/users/<id>` (creates the user with that id, or updates it when
 * it exists). Every call needs a role claim listed in JWT_ADMIN_ROLES.
 */
import { checkPassword } from "../auth/pwned.ts";
import type { LocalProvider, UserRow } from "../auth/users.ts";
import { isUniqueViolation, userToJson } from "../auth/users.ts";
import { UserPages } from "../auth/user_pages.ts";
import { confirmDepsOf, planConfirmation } from "../auth/confirm.ts";
import { softDeleteUser, updateUserAsAdmin } from "../auth/admin_users.ts";
import type { Services } from "../services.ts";
import { claimsOf, clientIp, type Ctx } from "./context.ts";
import {
  ApiError,
  AuthError,
  badRequest,
  statusOf,
  uniqueViolationAnswer,
  unprocessable,
} from "./errors.ts";
import { optBool, readBody, uuidParam } from "./input.ts";
import { adminUpdateFields, type AdminUserParams, parseAdminUser } from "./admin_input.ts";
import { userResponse } from "./user.ts";

function notFound(): ApiError {
  return new ApiError(404, "user_not_found", "User not found");
}

/** Which unique index a violation hit (or the check before the write found), as GoTrue's error. */
function conflict(e: unknown): AuthError {
  const answer = uniqueViolationAnswer(e);
  if (answer) return answer;
  const text = (e as Error).message ?? "";
  if (/email/.test(text)) {
    return unprocessable(
      "A user with this email address has already been registered",
      "email_exists",
    );
  }
  if (/phone/.test(text)) {
    return unprocessable(
      "A user with this phone number has already been registered",
      "phone_exists",
    );
  }
  return unprocessable("A user with this id already exists", "user_already_exists");
}

async function createUser(c: Ctx, s: Services, p: AdminUserParams, actor: Actor) {
  if (!p.email && !p.phone) {
    throw badRequest("Cannot create a user without either an email or phone");
  }
  if (p.email && await s.users.findByEmail(p.email)) throw conflict(new Error("email"));
  if (p.phone && await s.users.findByPhone(p.phone)) throw conflict(new Error("phone"));
  if (p.password && new TextEncoder().encode(p.password).length > 72) {
    // bcrypt reads 72 bytes; GoTrue answers its ErrPasswordTooLong with this 400.
    throw badRequest("Password cannot be longer than 72 bytes");
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
    ip: clientIp(c),
  });
  s.events.emit("signup", { method: "admin" });
  return c.json(await userResponse(s, user));
}

async function updateUser(c: Ctx, s: Services, user: UserRow, p: AdminUserParams, actor: Actor) {
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
      ip: clientIp(c),
    });
  }
  return c.json(await userResponse(s, updated));
}

function positiveInt(c: Ctx, name: string, def: number, max: number): number {
  const v = c.req.query(name);
  if (v === undefined || v === "") return def;
  if (!/^\d+$/.test(v) || Number(v) < 1) {
    throw badRequest(`Bad Pagination Parameters: ${name} must be a positive integer`);
  }
  return Math.min(Number(v), max);
}

async function listUsers(c: Ctx, s: Services) {
  const page = positiveInt(c, "page", 1, 1_000_000);
  const perPage = positiveInt(c, "per_page", 50, 1000);
  const filter = (c.req.query("filter") ?? "").trim().slice(0, 255);
  if (filter.includes("\0")) throw badRequest("filter must not contain a NUL character");
  // Our extension: keyset pages (docs/console.md), no OFFSET and no total count.
  const after = c.req.query("after");
  if (after !== undefined) {
    let page;
    try {
      page = await new UserPages(s.db).page(filter, after, perPage);
    } catch (e) {
      if (e instanceof TypeError) throw badRequest(e.message);
      throw e;
    }
    const ids = await s.users.identitiesOfUsers(page.users.map((u) => u.id));
    if (page.next) c.header("X-Next-Cursor", page.next);
    return c.json({
      users: page.users.map((u) => userToJson(u, { identities: ids.get(u.id) ?? [] })),
      aud: s.config.jwt.aud,
    });
  }
  // GoTrue's sort parameter: "created_at asc" or "created_at desc" (the default).
  const sort = (c.req.query("sort") ?? "").trim().toLowerCase();
  if (sort && !/^created_at(\s+(asc|desc))?$/.test(sort)) {
    throw badRequest("sort must be created_at asc or created_at desc");
  }
  const { total: n, users } = await s.users.list({
    filter,
    ascending: sort.endsWith("asc"),
    page,
    perPage,
  });
  const ids = await s.users.identitiesOfUsers(users.map((u) => u.id));
  // Links as GoTrue's addPaginationHeaders: the request's parameters with `page`
  // set (keys sorted), the last page being 0 for an empty list. Only the
  // parameters this route reads, as it read them: a request's unknown or huge
  // parameters are not copied into a header (twice) that clients would refuse.
  const lastPage = Math.ceil(n / perPage);
  const link = (p: number, rel: string) => {
    const q = new URLSearchParams({ page: String(p) });
    if (c.req.query("per_page")) q.set("per_page", String(perPage));
    if (filter) q.set("filter", filter);
    if (sort) q.set("sort", sort);
    q.sort();
    return `</admin/users?${q}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (page < lastPage) links.push(link(page + 1, "next"));
  links.push(link(lastPage, "last"));
  c.header("X-Total-Count", String(n));
  c.header("Link", links.join(", "));
  return c.json({
    users: users.map((u) => userToJson(u, { identities: ids.get(u.id) ?? [] })),
    aud: s.config.jwt.aud,
  });
}

async function deleteUser(c: Ctx, s: Services, id: string, actor: Actor) {
  const body = await readBody(c);
  const soft = optBool(body, "should_soft_delete") ?? false;
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
    ip: clientIp(c),
  });
  return c.json({});
}

/** The admin who made a request, for the audit log. */
interface Actor {
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

/** GET /admin/users. */
export async function adminListUsers(c: Ctx, s: Services): Promise<Response> {
  return await listUsers(c, s);
}

/** POST /admin/users. */
export async function adminCreateUser(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  const p = parseAdminUser(await readBody(c), s.config, s.clock.now());
  if (p.id && await s.users.findById(p.id)) throw conflict(new Error("id"));
  return await createUser(c, s, p, actorOf(claims));
}

/** GET /admin/users/:user_id. */
export async function adminGetUser(c: Ctx, s: Services): Promise<Response> {
  const user = await s.users.findById(uuidParam(c, "user_id"));
  if (!user) throw notFound();
  return c.json(await userResponse(s, user));
}

/** PUT /admin/users/:user_id. */
export async function adminUpdateUser(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  const id = uuidParam(c, "user_id");
  const p = parseAdminUser(await readBody(c), s.config, s.clock.now());
  const user = await s.users.findById(id);
  if (!user) throw notFound();
  return await updateUser(c, s, user, p, actorOf(claims));
}

// Spec 4: POST creates the user with that id; when it exists, it is updated.
/** POST /admin/users/:user_id: creates the user with that id, or updates it when it exists. */
export async function adminUpsertUser(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  const id = uuidParam(c, "user_id");
  const p = parseAdminUser(await readBody(c), s.config, s.clock.now());
  if (p.id && p.id !== id) throw badRequest("id in the body must match user_id of the path");
  const user = await s.users.findById(id);
  if (user) return await updateUser(c, s, user, p, actorOf(claims));
  try {
    return await createUser(c, s, { ...p, id }, actorOf(claims));
  } catch (e) {
    // A concurrent request with the same id created it first: answer as the request that
    // comes second does, by updating it.
    const now = e instanceof AuthError && statusOf(e) === 422 ? await s.users.findById(id) : null;
    if (now) return await updateUser(c, s, now, p, actorOf(claims));
    throw e;
  }
}

/** DELETE /admin/users/:user_id. */
export async function adminDeleteUser(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  return await deleteUser(c, s, uuidParam(c, "user_id"), actorOf(claims));
}

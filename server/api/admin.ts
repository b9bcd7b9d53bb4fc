/**
 * The admin users API (GoTrue's admin.go and what @supabase/auth-js's
 * GoTrueAdminApi calls): list (paged), create, get, update, delete, and
 * `POST /admin/users/<id>` (creates the user with that id, or updates it when
 * it exists). Every call needs a role claim listed in JWT_ADMIN_ROLES.
 */
import type { UserRow } from "../auth/users.ts";
import { userToJson } from "../auth/users.ts";
import { UserPages } from "../auth/user_pages.ts";
import {
  type Actor,
  actorOf,
  type AdminUserParams,
  conflict,
  createUserAsAdmin,
  deleteUserAsAdmin,
  updateUserAsAdminRequest,
} from "../auth/admin_flows.ts";
import type { Services } from "../services.ts";
import { claimsOf, type Ctx } from "./context.ts";
import { ApiError, AuthError, badRequest, statusOf } from "./errors.ts";
import { optBool, readBody, uuidParam } from "./input.ts";
import { parseAdminUser } from "./admin_input.ts";
import { requestMeta } from "./meta.ts";
import { userResponse } from "./user.ts";

export { actorOf };

function notFound(): ApiError {
  return new ApiError(404, "user_not_found", "User not found");
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

/** Applies an admin's update and answers the stored user. */
async function updated(c: Ctx, s: Services, user: UserRow, p: AdminUserParams, actor: Actor) {
  return c.json(
    await userResponse(s, await updateUserAsAdminRequest(s, user, p, actor, requestMeta(c))),
  );
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
  return c.json(
    await userResponse(s, await createUserAsAdmin(s, p, actorOf(claims), requestMeta(c))),
  );
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
  return await updated(c, s, user, p, actorOf(claims));
}

// Spec 4: POST creates the user with that id; when it exists, it is updated.
/** POST /admin/users/:user_id: creates the user with that id, or updates it when it exists. */
export async function adminUpsertUser(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  const id = uuidParam(c, "user_id");
  const p = parseAdminUser(await readBody(c), s.config, s.clock.now());
  if (p.id && p.id !== id) throw badRequest("id in the body must match user_id of the path");
  const user = await s.users.findById(id);
  if (user) return await updated(c, s, user, p, actorOf(claims));
  try {
    return c.json(
      await userResponse(
        s,
        await createUserAsAdmin(s, { ...p, id }, actorOf(claims), requestMeta(c)),
      ),
    );
  } catch (e) {
    // A concurrent request with the same id created it first: answer as the request that
    // comes second does, by updating it.
    const now = e instanceof AuthError && statusOf(e) === 422 ? await s.users.findById(id) : null;
    if (now) return await updated(c, s, now, p, actorOf(claims));
    throw e;
  }
}

/** DELETE /admin/users/:user_id. */
export async function adminDeleteUser(c: Ctx, s: Services): Promise<Response> {
  const claims = claimsOf(c);
  const soft = optBool(await readBody(c), "should_soft_delete") ?? false;
  await deleteUserAsAdmin(s, uuidParam(c, "user_id"), soft, actorOf(claims), requestMeta(c));
  return c.json({});
}

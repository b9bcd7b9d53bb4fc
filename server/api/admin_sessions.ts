/**
 * A user's sessions for operators (our extension; GoTrue has no such call):
 * `GET /admin/users/<id>/sessions` lists the sessions that have not expired,
 * with user agent, IP and last refresh; `DELETE` signs the user out
 * everywhere (their refresh tokens stop working at once; access tokens
 * already issued answer session_not_found on protected calls). Admin only,
 * audited as `logout` with the operator as actor.
 */
import type { UserRow } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { claimsOf, type Ctx } from "./context.ts";
import { ApiError } from "./errors.ts";
import { uuidParam } from "./input.ts";
import { actorOf, endSessionsAsAdmin } from "../auth/admin_flows.ts";
import { requestMeta } from "./meta.ts";

async function userOf(s: Services, id: string): Promise<UserRow> {
  const user = await s.users.findById(id);
  if (!user) throw new ApiError(404, "user_not_found", "User not found");
  return user;
}

/** GET /admin/users/:user_id/sessions. */
export async function adminListSessions(c: Ctx, s: Services): Promise<Response> {
  const user = await userOf(s, uuidParam(c, "user_id"));
  const sessions = await s.sessions.listOf(user.id);
  return c.json({
    sessions: sessions.map((x) => ({
      id: x.id,
      created_at: x.created_at,
      updated_at: x.updated_at,
      refreshed_at: x.refreshed_at,
      not_after: x.not_after,
      aal: x.aal,
      user_agent: x.user_agent,
      ip: x.ip,
    })),
  });
}

/** DELETE /admin/users/:user_id/sessions: signs the user out everywhere. */
export async function adminEndSessions(c: Ctx, s: Services): Promise<Response> {
  const user = await userOf(s, uuidParam(c, "user_id"));
  await endSessionsAsAdmin(s, user, actorOf(claimsOf(c)), requestMeta(c));
  return c.json({});
}

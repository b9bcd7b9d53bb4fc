/**
 * The hono environment of this server and the per-request helpers every
 * endpoint group uses: the caller's identity from the bearer token, the admin
 * check, and the client IP.
 */
import type { Context } from "../../deps.ts";
import type { AccessClaims } from "../auth/jwt.ts";
import type { SessionRow } from "../auth/sessions.ts";
import type { IdentityRow, UserRow } from "../auth/users.ts";
import type { FactorRow } from "../auth/mfa.ts";
import type { Services } from "../services.ts";
import { ApiError } from "./errors.ts";
import { isUuid } from "./input.ts";
import { parseTimestamptz } from "../util/time.ts";

/** Hono bindings and variables of this app. */
export type AppEnv = {
  Bindings: { remoteAddr?: string };
  Variables: { services: Services; requestId: string; clientIp: string };
};

/** The context type handlers receive. */
export type Ctx = Context<AppEnv>;

/** The authenticated caller. */
export interface Caller {
  claims: AccessClaims;
  user: UserRow;
  session: SessionRow | null;
  token: string;
}

/** The caller with what GET /user answers, loaded in one statement (`loadCallerProfile`). */
export interface CallerProfile {
  claims: AccessClaims;
  user: ProfileUser;
  identities: IdentityRow[];
  factors: FactorRow[];
}

/** The bearer token of the request, or a 401 no_authorization. */
export function bearerToken(c: Ctx): string {
  const h = c.req.header("authorization") ?? "";
  const m = /^bearer\s+(\S+)\s*$/i.exec(h);
  if (!m) throw new ApiError(401, "no_authorization", "This endpoint requires a Bearer token");
  return m[1];
}

/**
 * Verifies the bearer token and loads its user and session. A token whose
 * session has ended (sign-out, reuse detection) is refused with
 * session_not_found, as GoTrue does.
 */
export async function requireUser(c: Ctx): Promise<Caller> {
  const s = c.get("services");
  const token = bearerToken(c);
  const claims = await verifiedClaims(c, token);
  const user = await s.users.findById(claims.sub);
  if (!user) throw new ApiError(403, "user_not_found", "User from sub claim in JWT does not exist");
  let session: SessionRow | null = null;
  if (typeof claims.session_id === "string" && claims.session_id) {
    session = isUuid(claims.session_id) ? await s.sessions.findSession(claims.session_id) : null;
    if (!session) {
      throw new ApiError(
        403,
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
  }
  return { claims, user, session, token };
}

async function verifiedClaims(c: Ctx, token: string): Promise<AccessClaims> {
  const claims = await c.get("services").jwt.verify(token);
  if (!isUuid(claims.sub)) { // a non-UUID sub made the user lookup a 500 (tests/reliability)
    throw new ApiError(403, "bad_jwt", "invalid claim: sub claim must be a UUID");
  }
  return claims;
}

const profileSql = new WeakMap<Services, string>();

/** The user columns GET /user answers with (not the password hash, nor the bookkeeping ones). */
const PROFILE_COLUMNS = [
  "id",
  "aud",
  "role",
  "email",
  "email_confirmed_at",
  "invited_at",
  "confirmation_sent_at",
  "recovery_sent_at",
  "email_change",
  "email_change_sent_at",
  "phone",
  "phone_confirmed_at",
  "phone_change",
  "phone_change_sent_at",
  "reauthentication_sent_at",
  "last_sign_in_at",
  "raw_app_meta_data",
  "raw_user_meta_data",
  "banned_until",
  "is_anonymous",
  "created_at",
  "updated_at",
] as const;

/** The user as loadCallerProfile reads it. */
export type ProfileUser = Pick<UserRow, typeof PROFILE_COLUMNS[number]>;

/**
 * `requireUser` for GET /user: the same checks and errors in the same order
 * (bad_jwt, user_not_found, session_not_found), with the user, whether the
 * session exists, the identities and the factors read in ONE statement (one
 * round trip instead of four; same SQL on PostgreSQL and PGlite).
 */
export async function loadCallerProfile(c: Ctx): Promise<CallerProfile> {
  const s = c.get("services");
  const claims = await verifiedClaims(c, bearerToken(c));
  const sid = typeof claims.session_id === "string" && claims.session_id ? claims.session_id : null;
  let text = profileSql.get(s);
  if (!text) {
    // array_to_json turns timestamptz into ISO 8601 strings; they are read back into Dates
    // below. ARRAY(subquery) rather than json_agg(... ORDER BY ...): an ordered aggregate set up
    // a sort for every execution, whose memory made the backend grow and shrink its heap on
    // every GET /user (page faults were a third of PostgreSQL's time on it), and an aggregate
    // costs more to start than an array subquery; the few rows are put in order here instead.
    text = `SELECT ${PROFILE_COLUMNS.map((k) => `u.${k}`).join(", ")},
      EXISTS (SELECT 1 FROM ${s.sessions.sessions} x WHERE x.id = $2::uuid) AS "__session",
      array_to_json(ARRAY(SELECT i FROM ${s.users.identities} i
        WHERE i.user_id = u.id)) AS "__identities",
      array_to_json(ARRAY(SELECT f FROM ${s.mfa.factors} f
        WHERE f.user_id = u.id)) AS "__factors"
      FROM ${s.users.table} u WHERE u.id = $1 AND u.deleted_at IS NULL`;
    profileSql.set(s, text);
  }
  const rows = await s.users.db.query<
    ProfileUser & { __session: boolean; __identities: unknown; __factors: unknown }
  >(text, [claims.sub, sid !== null && isUuid(sid) ? sid : null]);
  const row = rows[0];
  if (!row) throw new ApiError(403, "user_not_found", "User from sub claim in JWT does not exist");
  if (sid !== null && !row.__session) {
    throw new ApiError(
      403,
      "session_not_found",
      "Session from session_id claim in JWT does not exist",
    );
  }
  // The row is the user: its three extra columns stay on it unread (copying the user columns
  // into a new object without them cost more than the rest of this function).
  return {
    claims,
    user: row,
    identities: jsonRows<IdentityRow>(row.__identities, [
      "last_sign_in_at",
      "created_at",
      "updated_at",
    ]),
    factors: jsonRows<FactorRow>(row.__factors, ["last_challenged_at", "created_at", "updated_at"]),
  };
}

/**
 * Rows of a JSON array column (text on some drivers, parsed on others) with their timestamps as Dates,
 * in the order of their `created_at`, then `id` (what the separate queries order by).
 */
function jsonRows<T>(v: unknown, dates: string[]): T[] {
  const list = (typeof v === "string" ? JSON.parse(v) : v ?? []) as Record<string, unknown>[];
  for (const r of list) {
    for (const k of dates) if (typeof r[k] === "string") r[k] = parseTimestamptz(r[k] as string);
  }
  if (list.length > 1) list.sort(byCreatedAt);
  return list as T[];
}

function byCreatedAt(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const d = (a.created_at as Date).getTime() - (b.created_at as Date).getTime();
  return d !== 0 ? d : String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0;
}

/** Verifies the bearer token and that its role claim is an admin role (JWT_ADMIN_ROLES). */
export async function requireAdmin(c: Ctx): Promise<AccessClaims> {
  const s = c.get("services");
  const claims = await s.jwt.verify(bearerToken(c));
  const role = typeof claims.role === "string" ? claims.role : "";
  if (!s.config.jwt.adminRoles.includes(role)) {
    throw new ApiError(403, "not_admin", "User not allowed");
  }
  return claims;
}

/** The client IP as computed for this request (socket, or the trusted forwarded header). */
export function clientIp(c: Ctx): string {
  return c.get("clientIp") ?? "";
}

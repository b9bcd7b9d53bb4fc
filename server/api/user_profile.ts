/**
 * GET /user: the caller's user as auth-js reads it (the user row, its
 * identities and its MFA factors), kept per user together with the profile
 * revision it was built at (migrations/0009_profile_rev.sql: every committed
 * change of the user row, an identity or a factor gives the user a revision
 * no other state of it has had).
 *
 * A request for a user whose answer is kept reads only the revision and
 * whether the token's session exists (the user's and the session's primary
 * keys); when the revision is the kept one, the kept JSON is the answer, the
 * same bytes building it again would give. Otherwise (the user's first request
 * to this process, or a change since) one statement reads the user, the
 * session check, the identities, the factors and the revision, and the answer
 * is built and kept. So every request still sees the database as it is: a
 * change made through any server process shows at the next request, a
 * signed-out session or a deleted user is refused at once.
 *
 * Errors and their order are requireUser's (context.ts): bad_jwt,
 * user_not_found, session_not_found.
 */
import type { FactorRow } from "../auth/mfa.ts";
import { factorToJson } from "../auth/mfa.ts";
import type { IdentityRow, UserRow } from "../auth/users.ts";
import { userToJson } from "../auth/users.ts";
import type { Services } from "../services.ts";
import { parseTimestamptz } from "../util/time.ts";
import { bearerToken, type Ctx, verifiedClaims } from "./context.ts";
import { ApiError } from "./errors.ts";
import { isUuid } from "./input.ts";

/** Kept GET /user answers by user id, each with the revision it was built at. */
export class ProfileCache {
  readonly #entries = new Map<string, { rev: number; body: string }>();

  /** `max`: how many users' answers are kept (AUTHSVC_API_USER_CACHE_SIZE); the oldest kept goes first. */
  constructor(readonly max: number) {}

  get(userId: string): { rev: number; body: string } | undefined {
    return this.#entries.get(userId);
  }

  set(userId: string, rev: number, body: string): void {
    if (this.max <= 0) return;
    this.#entries.delete(userId); // a re-kept user moves to the back
    this.#entries.set(userId, { rev, body });
    if (this.#entries.size > this.max) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }

  delete(userId: string): void {
    this.#entries.delete(userId);
  }

  get size(): number {
    return this.#entries.size;
  }
}

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

/** The user as the profile statement reads it. */
type ProfileUser = Pick<UserRow, typeof PROFILE_COLUMNS[number]>;

interface ProfileState {
  cache: ProfileCache;
  /** The revision and the session check. */
  revSql: string;
  /** Everything GET /user answers, the session check and the revision. */
  fullSql: string;
}

const states = new WeakMap<Services, ProfileState>();

function state(s: Services): ProfileState {
  let st = states.get(s);
  if (!st) {
    const session = `EXISTS (SELECT 1 FROM ${s.sessions.sessions} x WHERE x.id = $2::uuid)`;
    // array_to_json turns timestamptz into ISO 8601 strings; they are read back into Dates
    // below. ARRAY(subquery) rather than json_agg(... ORDER BY ...): an ordered aggregate set up
    // a sort for every execution, whose memory made the backend grow and shrink its heap on
    // every GET /user (page faults were a third of PostgreSQL's time on it), and an aggregate
    // costs more to start than an array subquery; the few rows are put in order here instead.
    st = {
      cache: new ProfileCache(s.config.api.userCacheSize),
      revSql: `SELECT u.profile_rev AS "__rev", ${session} AS "__session"
        FROM ${s.users.table} u WHERE u.id = $1 AND u.deleted_at IS NULL`,
      fullSql: `SELECT ${PROFILE_COLUMNS.map((k) => `u.${k}`).join(", ")},
        u.profile_rev AS "__rev", ${session} AS "__session",
        array_to_json(ARRAY(SELECT i FROM ${s.users.identities} i
          WHERE i.user_id = u.id)) AS "__identities",
        array_to_json(ARRAY(SELECT f FROM ${s.mfa.factors} f
          WHERE f.user_id = u.id)) AS "__factors"
        FROM ${s.users.table} u WHERE u.id = $1 AND u.deleted_at IS NULL`,
    };
    states.set(s, st);
  }
  return st;
}

/** The kept answers of a server (tests read their number). */
export function profileCache(s: Services): ProfileCache {
  return state(s).cache;
}

/** Both statements' first columns. */
interface RevRow {
  __rev: number;
  __session: boolean;
}

/** The user_not_found and session_not_found refusals, in that order. */
function refuse(st: ProfileState, userId: string, row: RevRow | undefined, sid: string | null) {
  if (!row) {
    st.cache.delete(userId);
    throw new ApiError(403, "user_not_found", "User from sub claim in JWT does not exist");
  }
  if (sid !== null && !row.__session) {
    throw new ApiError(
      403,
      "session_not_found",
      "Session from session_id claim in JWT does not exist",
    );
  }
}

/** GET /user's answer for the request's bearer token. */
export async function userProfileResponse(c: Ctx): Promise<Response> {
  const s = c.get("services");
  const claims = await verifiedClaims(c, bearerToken(c));
  const sid = typeof claims.session_id === "string" && claims.session_id ? claims.session_id : null;
  const sidParam = sid !== null && isUuid(sid) ? sid : null;
  const st = state(s);
  const kept = st.cache.get(claims.sub);
  if (kept) {
    const [row] = await s.users.db.query<RevRow>(st.revSql, [claims.sub, sidParam]);
    refuse(st, claims.sub, row, sid);
    if (row.__rev === kept.rev) return c.body(kept.body, 200, JSON_TYPE);
  }
  const [row] = await s.users.db.query<
    ProfileUser & RevRow & { __identities: unknown; __factors: unknown }
  >(st.fullSql, [claims.sub, sidParam]);
  refuse(st, claims.sub, row, sid);
  const factors = jsonRows<FactorRow>(row.__factors, [
    "last_challenged_at",
    "created_at",
    "updated_at",
  ]);
  // The row is the user: its extra columns stay on it unread (copying the user columns into a
  // new object without them cost more than the rest of this function).
  const body = JSON.stringify(userToJson(row, {
    identities: jsonRows<IdentityRow>(row.__identities, [
      "last_sign_in_at",
      "created_at",
      "updated_at",
    ]),
    factors: factors.length ? factors.map(factorToJson) : undefined,
  }));
  st.cache.set(claims.sub, row.__rev, body);
  return c.body(body, 200, JSON_TYPE);
}

const JSON_TYPE = { "content-type": "application/json" };

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

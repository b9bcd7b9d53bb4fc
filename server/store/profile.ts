/**
 * The two statements of GET /user (api/user_profile.ts): the caller's profile
 * revision with the session check, one primary-key lookup (enough when the
 * server keeps the answer built at that revision); and everything the answer
 * holds (the user row, its identities, its MFA factors) with the same two, in
 * one round trip. They read users, sessions, identities and mfa_factors by
 * primary or foreign key. The answer itself is built by the server
 * (auth/users.ts userToJson), never by the database.
 */
import type { Db } from "../db/db.ts";
import type { IdentityRow } from "./identities.ts";
import type { UserRow } from "./users.ts";
import { jsonRows } from "./json_rows.ts";

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
export type ProfileUser = Pick<UserRow, typeof PROFILE_COLUMNS[number]>;

/** The profile revision of a user and whether the session asked about exists. */
export interface ProfileRevision {
  rev: number;
  session: boolean;
  /** The user's banned_until (the ban check refuses a banned user's token). */
  banned_until: Date | null;
}

/** Everything GET /user answers, with the revision it was read at. */
export interface Profile<F> extends ProfileRevision {
  /** The row itself: its extra columns stay on it unread (copying cost more than the rest). */
  user: ProfileUser;
  identities: IdentityRow[];
  /** mfa_factors rows, timestamps as Dates. */
  factors: F[];
}

interface RevRow {
  __rev: number;
  __session: boolean;
  banned_until: Date | null;
}

/**
 * The text of GET /user's statements (bench/scale.ts explains them): `revision`, the one lookup
 * ($1 user id, $2 session id), and `full`, the four-table read.
 */
export function profileSql(db: Pick<Db, "t">): { revision: string; full: string } {
  const users = db.t("users");
  const session = `EXISTS (SELECT 1 FROM ${db.t("sessions")} x WHERE x.id = $2::uuid)`;
  // array_to_json turns timestamptz into ISO 8601 strings; they are read back into Dates
  // below. ARRAY(subquery) rather than json_agg(... ORDER BY ...): an ordered aggregate sets up
  // a sort for every execution, and costs more to start than an array subquery; the few rows
  // are put in order here instead.
  return {
    revision: `SELECT u.profile_rev AS "__rev", ${session} AS "__session", u.banned_until
        FROM ${users} u WHERE u.id = $1 AND u.deleted_at IS NULL`,
    full: `SELECT ${PROFILE_COLUMNS.map((k) => `u.${k}`).join(", ")},
        u.profile_rev AS "__rev", ${session} AS "__session",
        array_to_json(ARRAY(SELECT i FROM ${db.t("identities")} i
          WHERE i.user_id = u.id)) AS "__identities",
        array_to_json(ARRAY(SELECT f FROM ${db.t("mfa_factors")} f
          WHERE f.user_id = u.id)) AS "__factors"
        FROM ${users} u WHERE u.id = $1 AND u.deleted_at IS NULL`,
  };
}

/** The GET /user statements of one database. */
export class ProfileStore {
  readonly #revisionSql: string;
  readonly #fullSql: string;

  constructor(readonly db: Db) {
    const sql = profileSql(db);
    this.#revisionSql = sql.revision;
    this.#fullSql = sql.full;
  }

  /**
   * The user's profile revision and whether session `sessionId` exists (false
   * for null); null when the user does not exist.
   */
  async revision(userId: string, sessionId: string | null): Promise<ProfileRevision | null> {
    const [row] = await this.db.query<RevRow>(this.#revisionSql, [userId, sessionId]);
    return row ? { rev: row.__rev, session: row.__session, banned_until: row.banned_until } : null;
  }

  /** The user's profile (see {@link Profile}); null when the user does not exist. */
  async read<F>(userId: string, sessionId: string | null): Promise<Profile<F> | null> {
    const [row] = await this.db.query<
      ProfileUser & RevRow & { __identities: unknown; __factors: unknown }
    >(this.#fullSql, [userId, sessionId]);
    if (!row) return null;
    return {
      rev: row.__rev,
      session: row.__session,
      banned_until: row.banned_until,
      user: row,
      identities: jsonRows(row.__identities, [
        "last_sign_in_at",
        "created_at",
        "updated_at",
      ]) as unknown as IdentityRow[],
      factors: jsonRows(row.__factors, [
        "last_challenged_at",
        "created_at",
        "updated_at",
      ]) as unknown as F[],
    };
  }
}

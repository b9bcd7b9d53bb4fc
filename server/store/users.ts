/**
 * The users table: every statement that reads or writes a user row. E-mail
 * addresses arrive here already normalised by the domain (auth/users.ts).
 */
import { filteredPage, type SqlCondition, userFilterCondition } from "./user_search.ts";
import type { Db, Queryable } from "../db/db.ts";
import { isUniqueViolation } from "../db/db.ts";

export { isUniqueViolation };

/** A user row. */
export interface UserRow {
  id: string;
  aud: string;
  role: string;
  email: string | null;
  encrypted_password: string | null;
  email_confirmed_at: Date | null;
  invited_at: Date | null;
  confirmation_sent_at: Date | null;
  recovery_sent_at: Date | null;
  email_change: string | null;
  email_change_sent_at: Date | null;
  email_change_confirm_status: number;
  phone: string | null;
  phone_confirmed_at: Date | null;
  phone_change: string | null;
  phone_change_sent_at: Date | null;
  reauthentication_sent_at: Date | null;
  last_sign_in_at: Date | null;
  raw_app_meta_data: Record<string, unknown>;
  raw_user_meta_data: Record<string, unknown>;
  banned_until: Date | null;
  deleted_at: Date | null;
  is_anonymous: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Columns a caller may set when creating or updating a user. */
export type UserFields = Partial<Omit<UserRow, "id" | "created_at" | "updated_at">> & {
  id?: string;
};

/** One page of `GET /admin/users`. */
export interface UserPage {
  /** Users matching the filter, on every page. */
  total: number;
  users: UserRow[];
}

/** The users table of one database. */
export class UserStore {
  readonly #t: string;
  readonly #identities: string;

  constructor(readonly db: Db) {
    this.#t = db.t("users");
    this.#identities = db.t("identities");
  }

  async findById(id: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.#t} WHERE id = $1 AND deleted_at IS NULL`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** `email` as stored (normalised). */
  async findByEmail(email: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.#t} WHERE email = $1 AND deleted_at IS NULL`,
      [email],
    );
    return rows[0] ?? null;
  }

  /** Whether a user other than `userId` has `email`, as its address or an identity's. */
  async emailTakenByOther(email: string, userId: string, q: Queryable = this.db) {
    const rows = await q.query(
      `SELECT 1 FROM ${this.#t} WHERE email = $1 AND deleted_at IS NULL AND id <> $2
       UNION ALL
       SELECT 1 FROM ${this.#identities} i JOIN ${this.#t} u ON u.id = i.user_id
        WHERE i.email = $1 AND i.user_id <> $2 AND u.deleted_at IS NULL
       LIMIT 1`,
      [email, userId],
    );
    return rows.length > 0;
  }

  async findByPhone(phone: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.#t} WHERE phone = $1 AND deleted_at IS NULL`,
      [phone],
    );
    return rows[0] ?? null;
  }

  /** The user whose pending e-mail change goes to `email` (the latest asked). */
  async findByPendingEmail(email: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.#t} WHERE email_change = $1 AND deleted_at IS NULL
       ORDER BY email_change_sent_at DESC NULLS LAST LIMIT 1`,
      [email],
    );
    return rows[0] ?? null;
  }

  /** The user whose pending phone change goes to `phone` (the latest asked). */
  async findByPendingPhone(phone: string, q: Queryable = this.db): Promise<UserRow | null> {
    const rows = await q.query<UserRow>(
      `SELECT * FROM ${this.#t} WHERE phone_change = $1 AND deleted_at IS NULL
       ORDER BY phone_change_sent_at DESC NULLS LAST LIMIT 1`,
      [phone],
    );
    return rows[0] ?? null;
  }

  /**
   * Ids of the users owning one of `emails`, as their own address or as an
   * identity's address.
   */
  async ownersOfEmails(emails: string[], q: Queryable = this.db): Promise<string[]> {
    const rows = await q.query<{ id: string }>(
      `SELECT id FROM ${this.#t} WHERE email = ANY($1::text[]) AND deleted_at IS NULL
       UNION SELECT user_id AS id FROM ${this.#identities} WHERE email = ANY($1::text[])`,
      [emails],
    );
    return rows.map((r) => r.id);
  }

  /**
   * A page of users, not deleted, matching `filter` ("" matches everyone;
   * store/user_search.ts), ordered by creation, and how many match in all.
   */
  async list(o: {
    filter: string;
    ascending: boolean;
    limit: number;
    offset: number;
  }, q: Queryable = this.db): Promise<UserPage> {
    const dir = o.ascending ? "ASC" : "DESC";
    if (o.filter) {
      const match = userFilterCondition(o.filter, 1);
      const k = match.params.length;
      const rows = await q.query<UserRow & { match_count?: number }>(
        filteredPage(this.#t, match, {
          where: "true",
          order: `{t}.created_at ${dir}, {t}.id`,
          limit: `LIMIT $${k + 1} OFFSET $${k + 2}`,
          count: true,
        }),
        [...match.params, o.limit, o.offset],
      );
      // A page past the last has no row to carry the count.
      const total = rows.length ? rows[0].match_count! : await this.#count(match, q);
      return { total, users: rows.map(({ match_count: _, ...u }) => u as UserRow) };
    }
    const [{ n }] = await q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.#t} WHERE deleted_at IS NULL`,
    );
    const users = await q.query<UserRow>(
      `SELECT * FROM ${this.#t} WHERE deleted_at IS NULL ORDER BY created_at ${dir}, id
       LIMIT $1 OFFSET $2`,
      [o.limit, o.offset],
    );
    return { total: n, users };
  }

  async #count(match: SqlCondition, q: Queryable): Promise<number> {
    const [{ n }] = await q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.#t} WHERE deleted_at IS NULL AND ${match.sql}`,
      match.params,
    );
    return n;
  }

  /** Inserts a user; unique violations propagate (see isUniqueViolation). */
  async create(fields: UserFields, q: Queryable = this.db): Promise<UserRow> {
    const f: Record<string, unknown> = { ...fields };
    const cols = Object.keys(f).filter((k) => f[k] !== undefined);
    const vals = cols.map((k) => jsonable(f[k]));
    const rows = await q.query<UserRow>(
      `INSERT INTO ${this.#t} (${cols.join(", ")}) VALUES (${
        cols.map((_, i) => `$${i + 1}`).join(", ")
      }) RETURNING *`,
      vals,
    );
    return rows[0];
  }

  /** Updates columns of one user and returns the row (null when gone). */
  async update(id: string, fields: UserFields, q: Queryable = this.db): Promise<UserRow | null> {
    const f: Record<string, unknown> = { ...fields };
    const cols = Object.keys(f).filter((k) => f[k] !== undefined && k !== "id");
    const sets = cols.map((k, i) => `${k} = $${i + 2}`);
    sets.push("updated_at = now()");
    const rows = await q.query<UserRow>(
      `UPDATE ${this.#t} SET ${sets.join(", ")} WHERE id = $1 AND deleted_at IS NULL RETURNING *`,
      [id, ...cols.map((k) => jsonable(f[k]))],
    );
    return rows[0] ?? null;
  }

  /**
   * Takes the user row's lock and a new profile revision
   * (migrations/0009_profile_rev.sql); false when the user does not exist
   * (or is deleted). See Users.lockProfile (auth/users.ts).
   */
  async lockProfile(userId: string, q: Queryable): Promise<boolean> {
    const rows = await q.query(
      `UPDATE ${this.#t} SET profile_rev = nextval('${this.#t}_profile_rev_seq')
       WHERE id = $1 AND deleted_at IS NULL RETURNING id`,
      [userId],
    );
    return rows.length > 0;
  }

  /**
   * Records that `side` (a bit, auth/email_change.ts) of a secure e-mail
   * change confirmed, in one statement, and returns the record (null when
   * the user is gone).
   */
  async confirmEmailChangeSide(
    userId: string,
    side: number,
    q: Queryable = this.db,
  ): Promise<number | null> {
    const [row] = await q.query<{ n: number }>(
      `UPDATE ${this.#t} SET email_change_confirm_status = email_change_confirm_status | $2,
         updated_at = now() WHERE id = $1 RETURNING email_change_confirm_status::int AS n`,
      [userId, side],
    );
    return row?.n ?? null;
  }

  /** Adds a provider to raw_app_meta_data.providers (and sets provider when unset). */
  // GoTrue derives providers from identities: an anonymous user's first
  // identity replaces "anonymous" (models.User.UpdateAppMetaDataProviders).
  async addProvider(userId: string, provider: string, q: Queryable = this.db): Promise<void> {
    await q.query(
      `UPDATE ${this.#t} SET raw_app_meta_data =
         jsonb_set(
           CASE WHEN raw_app_meta_data ? 'provider'
                  AND raw_app_meta_data->>'provider' <> 'anonymous' THEN raw_app_meta_data
                ELSE raw_app_meta_data || jsonb_build_object('provider', $2::text) END,
           '{providers}',
           (SELECT COALESCE(jsonb_agg(DISTINCT p), '[]'::jsonb) FROM jsonb_array_elements_text(
              COALESCE(raw_app_meta_data->'providers', '[]'::jsonb) || jsonb_build_array($2::text)) AS p
            WHERE p <> 'anonymous' OR $2::text = 'anonymous')
         ),
         updated_at = now()
       WHERE id = $1`,
      [userId, provider],
    );
  }

  /** Marks the user deleted at `at`; the row stays (audit, foreign keys). */
  async markDeleted(id: string, at: Date, q: Queryable = this.db): Promise<void> {
    await q.query(
      `UPDATE ${this.#t} SET deleted_at = $2, updated_at = $2 WHERE id = $1`,
      [id, at],
    );
  }

  /** Removes the user row (identities, sessions and tokens go with it). */
  async delete(id: string, q: Queryable = this.db): Promise<boolean> {
    const rows = await q.query(`DELETE FROM ${this.#t} WHERE id = $1 RETURNING id`, [id]);
    return rows.length > 0;
  }
}

/** The columns and values of an INSERT of `fields` (undefined ones left out). */
export function insertColumns(fields: UserFields): { cols: string[]; vals: unknown[] } {
  const f: Record<string, unknown> = { ...fields };
  const cols = Object.keys(f).filter((k) => f[k] !== undefined);
  return { cols, vals: cols.map((k) => jsonable(f[k])) };
}

function jsonable(v: unknown): unknown {
  if (v !== null && typeof v === "object" && !(v instanceof Date) && !(v instanceof Uint8Array)) {
    return JSON.stringify(v);
  }
  return v;
}

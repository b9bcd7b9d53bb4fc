/**
 * The `sessions` table. A session's refresh tokens live in
 * store/refresh_tokens.ts; deleting a session deletes them (foreign key
 * `ON DELETE CASCADE`), so ending a session is one DELETE here.
 */
import type { Db, Queryable } from "../db/db.ts";
import { jsonRows } from "./json_rows.ts";
import { insertColumns, type UserFields } from "./users.ts";

/** One authentication method reference (the `amr` claim). */
export interface AmrEntry {
  method: string;
  timestamp: number;
  provider?: string;
}

/** A session row. */
export interface SessionRow {
  id: string;
  user_id: string;
  factor_id: string | null;
  aal: string;
  amr: AmrEntry[];
  not_after: Date | null;
  refreshed_at: Date | null;
  user_agent: string | null;
  ip: string | null;
  created_at: Date;
  updated_at: Date;
}

/** What a new session starts with. */
export interface NewSession {
  userId: string;
  amr: AmrEntry[];
  userAgent?: string;
  ip?: string;
  now: Date;
  /** SHA-256 (hex) of the session's first refresh token. */
  refreshTokenHash: string;
}

/** A new session of a sign-in, and the audit entry that goes with it. */
export interface NewSignIn extends NewSession {
  /** The audit entry's payload (complete) and IP address, written in the same statement. */
  audit?: { payload: Record<string, unknown>; ip: string };
}

/**
 * The parameters a sign-in statement ends with, in its order: amr, user agent, ip, now, the
 * refresh token's hash, the audit payload and the audit entry's ip.
 */
function signInParams(s: NewSignIn): unknown[] {
  return [
    JSON.stringify(s.amr),
    s.userAgent ?? null,
    s.ip ?? null,
    s.now,
    s.refreshTokenHash,
    s.audit ? JSON.stringify(s.audit.payload) : null,
    s.audit?.ip ?? "",
  ];
}

/** A local identity of a new user (its user_id: the user's). */
export interface NewIdentity {
  provider: string;
  provider_id: string;
  identity_data: Record<string, unknown>;
  email: string | null;
}

/** What {@link SessionStore.startSignIn} wrote and read, as the separate reads would give it. */
export interface SignedIn {
  /** The user row as updated (`SELECT *`). */
  user: Record<string, unknown>;
  session: SessionRow;
  /** The user's identities, oldest first. */
  identities: Record<string, unknown>[];
  /** The user's MFA factors, oldest first. */
  factors: Record<string, unknown>[];
}

/** The row of a statement that returns a user with its session, identities and factors. */
export type SignedInRow = Record<string, unknown> & {
  __session: unknown;
  __identities: unknown;
  __factors?: unknown;
};

const STAMPS = ["created_at", "updated_at"] as const;

/** Sessions of one database. */
export class SessionStore {
  readonly #db: Db;
  readonly #sessions: string;
  readonly #refreshTokens: string;
  readonly #users: string;
  readonly #startSignInSql: string;

  constructor(db: Db) {
    this.#db = db;
    this.#sessions = db.t("sessions");
    this.#refreshTokens = db.t("refresh_tokens");
    this.#users = db.t("users");
    this.#startSignInSql = `WITH u AS (
         UPDATE ${this.#users} SET last_sign_in_at = $5, updated_at = now()
         WHERE id = $1 AND deleted_at IS NULL AND (banned_until IS NULL OR banned_until <= $5)
         RETURNING *
       ), s AS (
         INSERT INTO ${this.#sessions} (user_id, aal, amr, user_agent, ip, created_at, updated_at)
         SELECT u.id, 'aal1', $2, $3, $4, $5, $5 FROM u RETURNING *
       ), r AS (
         INSERT INTO ${this.#refreshTokens} (token_hash, user_id, session_id, created_at, updated_at)
         SELECT $6, s.user_id, s.id, $5, $5 FROM s
       ), a AS (
         INSERT INTO ${this.#db.t("audit_log_entries")} (payload, ip_address)
         SELECT $7::jsonb, $8 FROM s WHERE $7::jsonb IS NOT NULL
       )
       SELECT u.*, row_to_json(s) AS "__session",
         array_to_json(ARRAY(SELECT i FROM ${this.#db.t("identities")} i
           WHERE i.user_id = u.id)) AS "__identities",
         array_to_json(ARRAY(SELECT f FROM ${this.#db.t("mfa_factors")} f
           WHERE f.user_id = u.id)) AS "__factors"
       FROM u, s`;
  }

  /**
   * A sign-in in ONE statement (one round trip and one commit instead of
   * five statements and three commits): starts a session and its first
   * refresh token, sets the user's last_sign_in_at to `s.now`, writes the
   * audit entry `s.audit`, and reads what a token set shows: the user row,
   * its identities and its factors; null when the user is deleted or banned
   * at `s.now` as the database has it now (then nothing is written).
   *
   * The user row is updated first, so the statement holds the row's lock
   * from its start: a ban (api/admin.ts updates the row, then deletes the
   * sessions, in one transaction) either waits for this sign-in and then
   * ends its session, or is seen by it (the UPDATE re-reads the row after
   * the wait and matches nothing).
   *
   * Without `q`, on a connection of its own: a committing statement
   * pipelined behind others on a shared connection would wait for each
   * one's WAL flush in turn, where separate backends flush together.
   */
  async startSignIn(s: NewSignIn, q?: Queryable): Promise<SignedIn | null> {
    const sql = this.#startSignInSql;
    const params = [s.userId, ...signInParams(s)];
    const [row] = q
      ? await q.query<SignedInRow>(sql, params)
      : await this.#db.withConnection((c) => c.query<SignedInRow>(sql, params));
    if (!row) return null;
    const { __session, __identities, __factors, ...user } = row;
    return {
      user,
      session: jsonRows(__session, [
        ...STAMPS,
        "not_after",
        "refreshed_at",
      ])[0] as unknown as SessionRow,
      identities: jsonRows(__identities, [...STAMPS, "last_sign_in_at"]),
      factors: jsonRows(__factors, [...STAMPS, "last_challenged_at"]),
    };
  }

  /**
   * A sign-up that signs in at once, in ONE statement: inserts the user
   * (`user`, its last_sign_in_at `s.now`) and its `identities`, then as
   * {@link startSignIn} the session, its first refresh token and the audit
   * entry `s.audit`. A unique violation (the address is someone's) propagates,
   * and then nothing is written.
   */
  async startSignUp(
    user: UserFields,
    identities: NewIdentity[],
    s: NewSignIn,
  ): Promise<SignedIn> {
    const { cols, vals } = insertColumns({ ...user, last_sign_in_at: s.now });
    const n = cols.length;
    const sql = `WITH u AS (
         INSERT INTO ${this.#users} (${cols.join(", ")})
         VALUES (${cols.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING *
       ), i AS (
         INSERT INTO ${this.#db.t("identities")}
           (user_id, provider, provider_id, identity_data, email, last_sign_in_at)
         SELECT u.id, x.provider, x.provider_id, x.identity_data, x.email, now()
         FROM u, jsonb_to_recordset($${n + 1}::jsonb)
           AS x(provider text, provider_id text, identity_data jsonb, email text)
         RETURNING *
       ), s AS (
         INSERT INTO ${this.#sessions} (user_id, aal, amr, user_agent, ip, created_at, updated_at)
         SELECT u.id, 'aal1', $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 5} FROM u
         RETURNING *
       ), r AS (
         INSERT INTO ${this.#refreshTokens} (token_hash, user_id, session_id, created_at, updated_at)
         SELECT $${n + 6}, s.user_id, s.id, $${n + 5}, $${n + 5} FROM s
       ), a AS (
         INSERT INTO ${this.#db.t("audit_log_entries")} (payload, ip_address)
         SELECT $${n + 7}::jsonb, $${n + 8} FROM s WHERE $${n + 7}::jsonb IS NOT NULL
       )
       SELECT u.*, row_to_json(s) AS "__session",
         array_to_json(ARRAY(SELECT i FROM i)) AS "__identities"
       FROM u, s`;
    const params = [...vals, JSON.stringify(identities), ...signInParams(s)];
    const [row] = await this.#db.withConnection((c) => c.query<SignedInRow>(sql, params));
    const { __session, __identities, ...fresh } = row;
    return {
      user: fresh,
      session: jsonRows(__session, [
        ...STAMPS,
        "not_after",
        "refreshed_at",
      ])[0] as unknown as SessionRow,
      identities: jsonRows(__identities, [...STAMPS, "last_sign_in_at"]),
      factors: [],
    };
  }

  async findById(id: string, q: Queryable = this.#db): Promise<SessionRow | null> {
    const rows = await q.query<SessionRow>(`SELECT * FROM ${this.#sessions} WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** The session, locked (`FOR UPDATE`) until `tx` ends; null when it does not exist. */
  async lockById(id: string, tx: Queryable): Promise<SessionRow | null> {
    const rows = await tx.query<SessionRow>(
      `SELECT * FROM ${this.#sessions} WHERE id = $1 FOR UPDATE`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Notes a refresh of the session at `now`. */
  async markRefreshed(id: string, now: Date, q: Queryable = this.#db): Promise<void> {
    await q.query(
      `UPDATE ${this.#sessions} SET refreshed_at = $2, updated_at = $2 WHERE id = $1`,
      [id, now],
    );
  }

  /**
   * Raises a session to aal2 with `factorId` and the given amr; the updated
   * row, or null when the session does not exist.
   */
  async raiseToAal2(
    id: string,
    factorId: string,
    amr: AmrEntry[],
    now: Date,
    q: Queryable = this.#db,
  ): Promise<SessionRow | null> {
    const [updated] = await q.query<SessionRow>(
      `UPDATE ${this.#sessions} SET aal = 'aal2', factor_id = $2, amr = $3, updated_at = $4
       WHERE id = $1 RETURNING *`,
      [id, factorId, JSON.stringify(amr), now],
    );
    return updated ?? null;
  }

  /**
   * Sessions of `userId` raised with `factorId` fall back to aal1 and lose
   * the amr entries of `amrMethod` (the factor is gone).
   */
  async lowerFromFactor(
    userId: string,
    factorId: string,
    amrMethod: string,
    now: Date,
    q: Queryable = this.#db,
  ): Promise<void> {
    await q.query(
      `UPDATE ${this.#sessions} SET aal = 'aal1', factor_id = NULL, updated_at = $4,
         amr = (SELECT COALESCE(jsonb_agg(e), '[]'::jsonb) FROM jsonb_array_elements(amr) AS e
                WHERE e->>'method' <> $3)
       WHERE user_id = $1 AND factor_id = $2`,
      [userId, factorId, amrMethod, now],
    );
  }

  /** Ends one session (its refresh tokens go with it). */
  async deleteById(id: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#sessions} WHERE id = $1`, [id]);
  }

  /** A user's sessions that have not reached their not_after, newest first (at most `limit`). */
  async listByUser(userId: string, now: Date, limit: number, q: Queryable = this.#db) {
    return await q.query<SessionRow>(
      `SELECT * FROM ${this.#sessions}
       WHERE user_id = $1 AND (not_after IS NULL OR not_after > $2)
       ORDER BY created_at DESC, id DESC LIMIT $3`,
      [userId, now, limit],
    );
  }

  /** Ends every session of a user. */
  async deleteByUser(userId: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#sessions} WHERE user_id = $1`, [userId]);
  }

  /** Ends session `id` when it belongs to `userId`. */
  async deleteOfUser(userId: string, id: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#sessions} WHERE id = $1 AND user_id = $2`, [id, userId]);
  }

  /** Ends every session of a user but `keepId`. */
  async deleteOthersOfUser(userId: string, keepId: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#sessions} WHERE user_id = $1 AND id <> $2`, [
      userId,
      keepId,
    ]);
  }

  /** Ends every aal1 session of a user but `keepId` (sessions that never passed MFA). */
  async deleteOtherAal1OfUser(
    userId: string,
    keepId: string,
    q: Queryable = this.#db,
  ): Promise<void> {
    await q.query(
      `DELETE FROM ${this.#sessions} WHERE user_id = $1 AND id <> $2 AND aal = 'aal1'`,
      [userId, keepId],
    );
  }
}

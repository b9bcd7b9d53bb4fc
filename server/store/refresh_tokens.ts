/**
 * The `refresh_tokens` table: SHA-256 hashes of refresh tokens, each in one
 * session (its family). A rotated token is revoked and points to nothing; its
 * child points to it with `parent_id`. Which of these to call is the refresh
 * policy's decision (auth/refresh_policy.ts); the caller holds the session's
 * lock (SessionStore.lockById) while it changes a family.
 */
import type { Db, Queryable } from "../db/db.ts";

/** A refresh_tokens row. */
export interface RefreshTokenRow {
  id: number;
  token_hash: string;
  user_id: string;
  session_id: string;
  parent_id: number | null;
  revoked: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Refresh tokens of one database. */
export class RefreshTokenStore {
  readonly #db: Db;
  readonly #tokens: string;
  readonly #sessions: string;
  readonly #users: string;

  constructor(db: Db) {
    this.#db = db;
    this.#tokens = db.t("refresh_tokens");
    this.#sessions = db.t("sessions");
    this.#users = db.t("users");
  }

  /** The token whose hash is `hash`, revoked or not; null when unknown. */
  async findByHash(hash: string, q: Queryable = this.#db): Promise<RefreshTokenRow | null> {
    const rows = await q.query<RefreshTokenRow>(
      `SELECT * FROM ${this.#tokens} WHERE token_hash = $1`,
      [hash],
    );
    return rows[0] ?? null;
  }

  async findById(id: number, q: Queryable = this.#db): Promise<RefreshTokenRow | null> {
    const rows = await q.query<RefreshTokenRow>(`SELECT * FROM ${this.#tokens} WHERE id = $1`, [
      id,
    ]);
    return rows[0] ?? null;
  }

  /** The newest token issued in exchange for `parentId`, or null. */
  async findLatestChild(
    parentId: number,
    q: Queryable = this.#db,
  ): Promise<RefreshTokenRow | null> {
    const rows = await q.query<RefreshTokenRow>(
      `SELECT * FROM ${this.#tokens} WHERE parent_id = $1 ORDER BY id DESC LIMIT 1`,
      [parentId],
    );
    return rows[0] ?? null;
  }

  /**
   * Rotates `parent`: revokes it and stores its child (hash `childHash`) in
   * the same session. Two statements today; the caller's transaction and the
   * session lock make them one step.
   */
  async rotate(
    parent: Pick<RefreshTokenRow, "id" | "user_id" | "session_id">,
    childHash: string,
    now: Date,
    q: Queryable = this.#db,
  ): Promise<void> {
    await q.query(
      `UPDATE ${this.#tokens} SET revoked = true, updated_at = $2 WHERE id = $1`,
      [parent.id, now],
    );
    await q.query(
      `INSERT INTO ${this.#tokens} (token_hash, user_id, session_id, parent_id, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $5)`,
      [childHash, parent.user_id, parent.session_id, parent.id, now],
    );
  }

  /**
   * Revokes every token of the session and ends the session (a reused token
   * means the family may be in a thief's hands).
   */
  async revokeFamily(sessionId: string, now: Date, q: Queryable = this.#db): Promise<void> {
    await q.query(
      `UPDATE ${this.#tokens} SET revoked = true, updated_at = $2 WHERE session_id = $1`,
      [sessionId, now],
    );
    await q.query(`DELETE FROM ${this.#sessions} WHERE id = $1`, [sessionId]);
  }

  /**
   * Revokes the live tokens of session `sessionId` and stores a new one
   * (hash `tokenHash`), in one statement, only while the user is neither
   * deleted nor banned at `now` and the session still exists. False when
   * nothing was stored.
   */
  async replaceInSession(
    userId: string,
    sessionId: string,
    tokenHash: string,
    now: Date,
    q: Queryable = this.#db,
  ): Promise<boolean> {
    const [done] = await q.query<{ id: number }>(
      `WITH u AS (
         SELECT id FROM ${this.#users} WHERE id = $1 AND deleted_at IS NULL
           AND (banned_until IS NULL OR banned_until <= $3) FOR SHARE
       ), s AS (
         SELECT id FROM ${this.#sessions} WHERE id = $2 AND user_id IN (SELECT id FROM u)
         FOR UPDATE
       ), old AS (
         UPDATE ${this.#tokens} SET revoked = true, updated_at = $3
         WHERE session_id IN (SELECT id FROM s) AND NOT revoked
       )
       INSERT INTO ${this.#tokens} (token_hash, user_id, session_id, created_at, updated_at)
       SELECT $4, $1, s.id, $3, $3 FROM s RETURNING id`,
      [userId, sessionId, now, tokenHash],
    );
    return done !== undefined;
  }
}

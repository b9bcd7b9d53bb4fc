/**
 * The `refresh_tokens` table: SHA-256 hashes of refresh tokens, each in one
 * session (its family). A rotated token is revoked and points to nothing; its
 * child points to it with `parent_id`. Which of these to call is the refresh
 * policy's decision (auth/refresh_policy.ts); the caller holds the session's
 * lock (SessionStore.lockById) while it changes a family.
 */
import type { Db, Queryable } from "../db/db.ts";
import type { SessionRow, SignedIn, SignedInRow } from "./sessions.ts";
import { jsonRows } from "./json_rows.ts";

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

/**
 * What {@link RefreshTokenStore.rotateLive} read, as the separate reads would give it (the
 * session as it was locked, before it was noted refreshed).
 */
export type RotatedLive = SignedIn;

const STAMPS = ["created_at", "updated_at"] as const;

/** The text of {@link RefreshTokenStore.rotateLive}'s statement (bench/scale.ts explains it). */
export function rotateLiveSql(db: Pick<Db, "t">): string {
  const [tokens, sessions, users] = [db.t("refresh_tokens"), db.t("sessions"), db.t("users")];
  // $1 token hash, $2 child hash, $3 now, $4 timebox s, $5 inactivity s, $6 audit payload, $7 ip.
  // `t` reads the token in the statement's snapshot; whether it is still live is decided by
  // the UPDATE in `old`, which re-reads the newest version of the row after any lock wait.
  return `WITH t AS (
      SELECT id, session_id, user_id, updated_at FROM ${tokens}
      WHERE token_hash = $1 AND NOT revoked
    ), s AS (
      SELECT x.* FROM ${sessions} x WHERE x.id = (SELECT session_id FROM t) FOR UPDATE
    ), u AS (
      SELECT y.* FROM ${users} y WHERE y.id = (SELECT user_id FROM t) AND y.deleted_at IS NULL
        AND (y.banned_until IS NULL OR y.banned_until <= $3)
    ), ok AS (
      SELECT s.id FROM s, u
      WHERE (s.not_after IS NULL OR s.not_after > $3)
        AND ($4::float8 = 0 OR s.created_at >= $3 - make_interval(secs => $4::float8))
        AND ($5::float8 = 0 OR COALESCE(s.refreshed_at,
            GREATEST(s.created_at, (SELECT updated_at FROM t))) >= $3 - make_interval(secs => $5::float8))
    ), old AS (
      UPDATE ${tokens} r SET revoked = true, updated_at = $3 FROM t
      WHERE r.id = t.id AND NOT r.revoked AND r.session_id IN (SELECT id FROM ok)
      RETURNING r.id, r.user_id, r.session_id
    ), child AS (
      INSERT INTO ${tokens} (token_hash, user_id, session_id, parent_id, created_at, updated_at)
      SELECT $2, user_id, session_id, id, $3, $3 FROM old
    ), touch AS (
      UPDATE ${sessions} x SET refreshed_at = $3, updated_at = $3 FROM old
      WHERE x.id = old.session_id
    ), audit AS (
      INSERT INTO ${db.t("audit_log_entries")} (payload, ip_address)
      SELECT $6::jsonb || jsonb_build_object('actor_id', u.id::text,
          'actor_username', COALESCE(NULLIF(u.email, ''), u.phone, '')), $7
      FROM u, old
    )
    SELECT u.*, row_to_json(s) AS "__session",
      array_to_json(ARRAY(SELECT i FROM ${db.t("identities")} i
        WHERE i.user_id = u.id)) AS "__identities",
      array_to_json(ARRAY(SELECT f FROM ${db.t("mfa_factors")} f
        WHERE f.user_id = u.id)) AS "__factors"
    FROM u, s, old`;
}

/** Refresh tokens of one database. */
export class RefreshTokenStore {
  readonly #db: Db;
  readonly #tokens: string;
  readonly #sessions: string;
  readonly #users: string;
  readonly #rotateLiveSql: string;

  constructor(db: Db) {
    this.#db = db;
    this.#tokens = db.t("refresh_tokens");
    this.#sessions = db.t("sessions");
    this.#users = db.t("users");
    this.#rotateLiveSql = rotateLiveSql(db);
  }

  /**
   * The refresh grant's common case in ONE statement: when the token whose
   * hash is `p.hash` is live, its session and user are in good standing at
   * `p.now` (not banned or deleted; the session within `not_after`, the
   * timebox and the inactivity timeout, 0 meaning none, as
   * auth/session_limits.ts reads them), it revokes the
   * token, stores its child (`p.childHash`), notes the session refreshed and
   * writes the audit entry `p.auditPayload` (completed with the user's id and
   * e-mail or phone as actor), all or nothing; null otherwise, having
   * changed nothing (the caller then reads the rows and asks the policy).
   *
   * Concurrency: the session row is locked before the token row (the order
   * of every writer of a family, and of deleting a session), and the token
   * is revoked only if it is still live in its newest version, so of two
   * exchanges of one token at most one rotates; the other gets null.
   */
  async rotateLive(p: {
    hash: string;
    childHash: string;
    now: Date;
    timeboxSec: number;
    inactivityTimeoutSec: number;
    auditPayload: Record<string, unknown>;
    ip: string;
  }, q?: Queryable): Promise<RotatedLive | null> {
    const params = [
      p.hash,
      p.childHash,
      p.now,
      p.timeboxSec,
      p.inactivityTimeoutSec,
      JSON.stringify(p.auditPayload),
      p.ip,
    ];
    // On a connection of its own (unless the caller gives one): a statement that commits,
    // pipelined behind others on a shared connection, would wait for each one's WAL flush in
    // turn, where separate backends flush together (group commit).
    const [row] = q
      ? await q.query<SignedInRow>(this.#rotateLiveSql, params)
      : await this.#db.withConnection((c) => c.query<SignedInRow>(this.#rotateLiveSql, params));
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

  /**
   * The tokens issued, directly or in turn, in exchange for token `parentId` of session
   * `sessionId` no later than `until`, down to `generations` exchanges below it, each with its
   * `generation` (1: a child of `parentId`), in order of generation and id. A rotation gives a
   * token one child, so this is the chain from the token towards the session's live token.
   */
  async descendants(
    parentId: number,
    sessionId: string,
    until: Date,
    generations: number,
    q: Queryable = this.#db,
  ): Promise<(RefreshTokenRow & { generation: number })[]> {
    return await q.query<RefreshTokenRow & { generation: number }>(
      `WITH RECURSIVE d AS (
         SELECT r.*, 1 AS generation FROM ${this.#tokens} r
         WHERE r.parent_id = $1 AND r.session_id = $2 AND r.created_at <= $3
         UNION ALL
         SELECT r.*, d.generation + 1 FROM ${this.#tokens} r JOIN d ON r.parent_id = d.id
         WHERE r.session_id = $2 AND r.created_at <= $3 AND d.generation < $4
       )
       SELECT * FROM d ORDER BY generation, id`,
      [parentId, sessionId, until, generations],
    );
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

/**
 * The `one_time_tokens` table: e-mail links and codes, SMS codes,
 * reauthentication nonces, stored as hashes only (auth/otp.ts decides what
 * is stored and when a token counts as valid). A row is consumed with
 * `DELETE ... RETURNING`, so two processes cannot both consume it.
 */
import type { Db, Queryable } from "../db/db.ts";

/** A one_time_tokens row. */
export interface OneTimeTokenRow {
  id: string;
  user_id: string;
  token_type: string;
  token_hash: string;
  code_hash: string | null;
  relates_to: string;
  attempts: number;
  data: Record<string, unknown>;
  created_at: Date;
  expires_at: Date;
}

/** What a new token row holds. */
export interface NewOneTimeToken {
  userId: string;
  type: string;
  tokenHash: string;
  codeHash: string;
  recipient: string;
  data: Record<string, unknown>;
  now: Date;
  expiresAt: Date;
}

/** `$<first>, $<first+1>, ...` for `n` parameters. */
const params = (n: number, first: number) =>
  Array.from({ length: n }, (_, i) => `$${i + first}`).join(", ");

/** One-time tokens of one database. */
export class OneTimeTokenStore {
  readonly #db: Db;
  readonly #tokens: string;

  constructor(db: Db) {
    this.#db = db;
    this.#tokens = db.t("one_time_tokens");
  }

  /**
   * Removes the user's expired tokens and, when `replaceType` is true, their
   * tokens of `type` that were not issued alongside others.
   */
  async deleteReplacedAndExpired(
    userId: string,
    type: string,
    replaceType: boolean,
    now: Date,
    q: Queryable = this.#db,
  ): Promise<void> {
    await q.query(
      `DELETE FROM ${this.#tokens} WHERE user_id = $1 AND ((token_type = $2 AND $4::boolean
         AND (data->>'alongside') IS DISTINCT FROM 'true') OR expires_at <= $3)`,
      [userId, type, now, replaceType],
    );
  }

  /** Stores a token; its id. */
  async insert(t: NewOneTimeToken, q: Queryable = this.#db): Promise<string> {
    const [row] = await q.query<{ id: string }>(
      `INSERT INTO ${this.#tokens}
         (user_id, token_type, token_hash, code_hash, relates_to, data, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
      [
        t.userId,
        t.type,
        t.tokenHash,
        t.codeHash,
        t.recipient,
        JSON.stringify(t.data),
        t.now,
        t.expiresAt,
      ],
    );
    return row.id;
  }

  /** Deletes and returns the token of one of `types` whose link hash is `hash` (expired too). */
  async consumeByHash(
    hash: string,
    types: readonly string[],
    q: Queryable = this.#db,
  ): Promise<OneTimeTokenRow | null> {
    const rows = await q.query<OneTimeTokenRow>(
      `DELETE FROM ${this.#tokens} WHERE token_hash = $1 AND token_type IN (${
        params(types.length, 2)
      }) RETURNING *`,
      [hash, ...types],
    );
    return rows[0] ?? null;
  }

  /** The token of one of `types` whose link hash is `hash` (expired too), not consumed. */
  async findByHash(
    hash: string,
    types: readonly string[],
    q: Queryable = this.#db,
  ): Promise<OneTimeTokenRow | null> {
    const rows = await q.query<OneTimeTokenRow>(
      `SELECT * FROM ${this.#tokens} WHERE token_hash = $1 AND token_type IN (${
        params(types.length, 2)
      })`,
      [hash, ...types],
    );
    return rows[0] ?? null;
  }

  /** Tokens of `types` with a code, sent to `recipient`, unexpired at `now`. */
  async listCodesFor(
    recipient: string,
    types: readonly string[],
    now: Date,
    q: Queryable = this.#db,
  ): Promise<OneTimeTokenRow[]> {
    return await q.query<OneTimeTokenRow>(
      `SELECT * FROM ${this.#tokens} WHERE relates_to = $1 AND code_hash IS NOT NULL
         AND expires_at > $2 AND token_type IN (${params(types.length, 3)})`,
      [recipient, now, ...types],
    );
  }

  /** The user id of some token of `types` sent to `recipient` (expired too), or null. */
  async findUserIdByRecipient(
    recipient: string,
    types: readonly string[],
    q: Queryable = this.#db,
  ): Promise<string | null> {
    const rows = await q.query<{ user_id: string }>(
      `SELECT user_id FROM ${this.#tokens} WHERE relates_to = $1 AND token_type IN (${
        params(types.length, 2)
      }) LIMIT 1`,
      [recipient, ...types],
    );
    return rows[0]?.user_id ?? null;
  }

  /**
   * Takes one attempt of token `id`, atomically: false when it has
   * `maxAttempts` already (or is gone).
   */
  async takeAttempt(id: string, maxAttempts: number, q: Queryable = this.#db): Promise<boolean> {
    const [taken] = await q.query<{ attempts: number }>(
      `UPDATE ${this.#tokens} SET attempts = attempts + 1 WHERE id = $1 AND attempts < $2
       RETURNING attempts`,
      [id, maxAttempts],
    );
    return taken !== undefined;
  }

  /** Deletes and returns token `id`; null when another request consumed it first. */
  async consumeById(id: string, q: Queryable = this.#db): Promise<OneTimeTokenRow | null> {
    const rows = await q.query<OneTimeTokenRow>(
      `DELETE FROM ${this.#tokens} WHERE id = $1 RETURNING *`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Deletes those of `ids` whose attempts reached `maxAttempts`. */
  async deleteSpent(
    ids: readonly string[],
    maxAttempts: number,
    q: Queryable = this.#db,
  ): Promise<void> {
    if (!ids.length) return;
    await q.query(
      `DELETE FROM ${this.#tokens} WHERE id IN (${params(ids.length, 1)}) AND attempts >= $${
        ids.length + 1
      }`,
      [...ids, maxAttempts],
    );
  }

  async deleteById(id: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#tokens} WHERE id = $1`, [id]);
  }

  /** Deletes a user's tokens of `types`; of every type when `types` is empty. */
  async deleteByUser(
    userId: string,
    types: readonly string[],
    q: Queryable = this.#db,
  ): Promise<void> {
    if (types.length === 0) {
      await q.query(`DELETE FROM ${this.#tokens} WHERE user_id = $1`, [userId]);
      return;
    }
    await q.query(
      `DELETE FROM ${this.#tokens} WHERE user_id = $1 AND token_type IN (${
        params(types.length, 2)
      })`,
      [userId, ...types],
    );
  }

  /** The user's newest token of `type` unexpired at `now`, or null. */
  async findPending(
    userId: string,
    type: string,
    now: Date,
    q: Queryable = this.#db,
  ): Promise<OneTimeTokenRow | null> {
    const rows = await q.query<OneTimeTokenRow>(
      `SELECT * FROM ${this.#tokens} WHERE user_id = $1 AND token_type = $2 AND expires_at > $3
       ORDER BY created_at DESC LIMIT 1`,
      [userId, type, now],
    );
    return rows[0] ?? null;
  }

  /** A user's tokens of `type`, expired ones too. */
  async listOfUser(
    userId: string,
    type: string,
    q: Queryable = this.#db,
  ): Promise<OneTimeTokenRow[]> {
    return await q.query<OneTimeTokenRow>(
      `SELECT * FROM ${this.#tokens} WHERE user_id = $1 AND token_type = $2`,
      [userId, type],
    );
  }

  /** Puts rows read before back as they were; rows whose id exists again are left alone. */
  async reinsert(rows: readonly OneTimeTokenRow[], q: Queryable = this.#db): Promise<void> {
    for (const r of rows) {
      await q.query(
        `INSERT INTO ${this.#tokens} (id, user_id, token_type, token_hash, code_hash, relates_to,
           attempts, data, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
        [
          r.id,
          r.user_id,
          r.token_type,
          r.token_hash,
          r.code_hash,
          r.relates_to,
          r.attempts,
          JSON.stringify(r.data ?? {}),
          r.created_at,
          r.expires_at,
        ],
      );
    }
  }
}

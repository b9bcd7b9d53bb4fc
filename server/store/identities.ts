/**
 * The identities table: one row per provider account linked to a user
 * (`email` and `phone` identities have the user id as provider_id).
 */
import type { Db, Queryable } from "../db/db.ts";

/** An identity row (one per provider account linked to a user). */
export interface IdentityRow {
  id: string;
  user_id: string;
  provider: string;
  provider_id: string;
  identity_data: Record<string, unknown>;
  email: string | null;
  last_sign_in_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The identities table of one database. */
export class IdentityStore {
  readonly #t: string;

  constructor(readonly db: Db) {
    this.#t = db.t("identities");
  }

  /** The identities of a user, oldest first. */
  async listByUser(userId: string, q: Queryable = this.db): Promise<IdentityRow[]> {
    return await q.query<IdentityRow>(
      `SELECT * FROM ${this.#t} WHERE user_id = $1 ORDER BY created_at, id`,
      [userId],
    );
  }

  /** The identities of several users, by user id, each list oldest first. */
  async listByUsers(
    userIds: string[],
    q: Queryable = this.db,
  ): Promise<Map<string, IdentityRow[]>> {
    const out = new Map<string, IdentityRow[]>();
    if (!userIds.length) return out;
    const rows = await q.query<IdentityRow>(
      `SELECT * FROM ${this.#t} WHERE user_id IN (${
        userIds.map((_, i) => `$${i + 1}::uuid`).join(", ")
      }) ORDER BY created_at, id`,
      userIds,
    );
    for (const r of rows) out.set(r.user_id, [...(out.get(r.user_id) ?? []), r]);
    return out;
  }

  /** The identity of (provider, provider id), if any. */
  async findByProviderId(
    provider: string,
    providerId: string,
    q: Queryable = this.db,
  ): Promise<IdentityRow | undefined> {
    const [row] = await q.query<IdentityRow>(
      `SELECT * FROM ${this.#t} WHERE provider = $1 AND provider_id = $2`,
      [provider, providerId],
    );
    return row;
  }

  /** Inserts an identity, signed in now; `email` as stored (normalised) or null. */
  async create(
    fields: {
      user_id: string;
      provider: string;
      provider_id: string;
      identity_data: Record<string, unknown>;
      email: string | null;
    },
    q: Queryable = this.db,
  ): Promise<IdentityRow> {
    const rows = await q.query<IdentityRow>(
      `INSERT INTO ${this.#t} (user_id, provider, provider_id, identity_data, email, last_sign_in_at)
       VALUES ($1, $2, $3, $4, $5, now()) RETURNING *`,
      [
        fields.user_id,
        fields.provider,
        fields.provider_id,
        JSON.stringify(fields.identity_data),
        fields.email,
      ],
    );
    return rows[0];
  }

  /**
   * Sets identity_data and email of the user's identity of `provider`; false
   * when the user has none.
   */
  async updateData(
    userId: string,
    provider: string,
    data: Record<string, unknown>,
    email: string | null,
    q: Queryable = this.db,
  ): Promise<boolean> {
    const rows = await q.query<{ id: string }>(
      `UPDATE ${this.#t} SET identity_data = $3, email = $4, updated_at = now()
       WHERE user_id = $1 AND provider = $2 RETURNING id`,
      [userId, provider, JSON.stringify(data), email],
    );
    return rows.length > 0;
  }

  /** A sign-in through identity `id`: its new data and e-mail, signed in at `at`. */
  async recordSignIn(
    id: string,
    data: Record<string, unknown>,
    email: string | null,
    at: Date,
    q: Queryable = this.db,
  ): Promise<void> {
    await q.query(
      `UPDATE ${this.#t} SET identity_data = $2, email = $3, last_sign_in_at = $4,
         updated_at = $4 WHERE id = $1`,
      [id, JSON.stringify(data), email, at],
    );
  }

  async delete(id: string, q: Queryable = this.db): Promise<void> {
    await q.query(`DELETE FROM ${this.#t} WHERE id = $1`, [id]);
  }

  /** Removes every identity of the user. */
  async deleteAllOf(userId: string, q: Queryable = this.db): Promise<void> {
    await q.query(`DELETE FROM ${this.#t} WHERE user_id = $1`, [userId]);
  }

  /** Removes the user's identities of providers other than `keepProviders`. */
  async deleteAllExcept(
    userId: string,
    keepProviders: string[],
    q: Queryable = this.db,
  ): Promise<void> {
    await q.query(
      `DELETE FROM ${this.#t} WHERE user_id = $1 AND NOT (provider = ANY($2::text[]))`,
      [userId, keepProviders],
    );
  }
}

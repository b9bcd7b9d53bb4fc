/**
 * The `mfa_factors` and `mfa_challenges` tables. Writing a factor changes
 * its user's profile revision (a trigger, migrations/0009_profile_rev.sql);
 * inside a transaction, lock the user row first (Users.lockProfile) to keep
 * one lock order.
 */
import type { Db, Queryable } from "../db/db.ts";

/** Factor types this server enrolls. */
export type FactorType = "totp" | "phone";

/** A factor row. */
export interface FactorRow {
  id: string;
  user_id: string;
  friendly_name: string;
  factor_type: FactorType;
  status: "unverified" | "verified";
  secret: string | null;
  phone: string | null;
  last_challenged_at: Date | null;
  last_totp_step: number | null;
  created_at: Date;
  updated_at: Date;
}

/** A challenge row. */
export interface ChallengeRow {
  id: string;
  factor_id: string;
  ip_address: string;
  otp_code_hash: string | null;
  attempts: number;
  verified_at: Date | null;
  created_at: Date;
}

/** What a new factor starts with (always unverified). */
export interface NewFactor {
  userId: string;
  friendlyName: string;
  type: FactorType;
  secret?: string;
  phone?: string;
  now: Date;
}

/** MFA factors of one database. */
export class FactorStore {
  readonly #db: Db;
  readonly #factors: string;

  constructor(db: Db) {
    this.#db = db;
    this.#factors = db.t("mfa_factors");
  }

  /** A user's factors, oldest first. */
  async listByUser(userId: string, q: Queryable = this.#db): Promise<FactorRow[]> {
    return await q.query<FactorRow>(
      `SELECT * FROM ${this.#factors} WHERE user_id = $1 ORDER BY created_at, id`,
      [userId],
    );
  }

  async findById(id: string, q: Queryable = this.#db): Promise<FactorRow | null> {
    const rows = await q.query<FactorRow>(`SELECT * FROM ${this.#factors} WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** Factor `id` when it belongs to `userId`, else null. */
  async findOfUser(userId: string, id: string, q: Queryable = this.#db): Promise<FactorRow | null> {
    const rows = await q.query<FactorRow>(
      `SELECT * FROM ${this.#factors} WHERE id = $1 AND user_id = $2`,
      [id, userId],
    );
    return rows[0] ?? null;
  }

  async countVerified(userId: string, q: Queryable = this.#db): Promise<number> {
    const [r] = await q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.#factors} WHERE user_id = $1 AND status = 'verified'`,
      [userId],
    );
    return r.n;
  }

  /** The user's phone factors for `phone`. */
  async findPhone(
    userId: string,
    phone: string | null,
    q: Queryable = this.#db,
  ): Promise<FactorRow[]> {
    return await q.query<FactorRow>(
      `SELECT * FROM ${this.#factors} WHERE user_id = $1 AND factor_type = 'phone' AND phone = $2`,
      [userId, phone],
    );
  }

  /** Removes the user's phone factors for `phone`. */
  async deletePhone(userId: string, phone: string | null, q: Queryable = this.#db): Promise<void> {
    await q.query(
      `DELETE FROM ${this.#factors} WHERE user_id = $1 AND factor_type = 'phone' AND phone = $2`,
      [userId, phone],
    );
  }

  /** Removes the user's unverified factors created before `before`. */
  async deleteUnverifiedBefore(
    userId: string,
    before: Date,
    q: Queryable = this.#db,
  ): Promise<void> {
    await q.query(
      `DELETE FROM ${this.#factors} WHERE user_id = $1 AND status = 'unverified' AND created_at < $2`,
      [userId, before],
    );
  }

  /** Removes the user's other unverified factors of `type` (all but `keepId`). */
  async deleteOtherUnverified(
    userId: string,
    keepId: string,
    type: FactorType,
    q: Queryable = this.#db,
  ): Promise<void> {
    await q.query(
      `DELETE FROM ${this.#factors}
       WHERE user_id = $1 AND id <> $2 AND factor_type = $3 AND status = 'unverified'`,
      [userId, keepId, type],
    );
  }

  async insert(f: NewFactor, q: Queryable = this.#db): Promise<FactorRow> {
    const [row] = await q.query<FactorRow>(
      `INSERT INTO ${this.#factors} (user_id, friendly_name, factor_type, status, secret, phone, created_at, updated_at)
       VALUES ($1, $2, $3, 'unverified', $4, $5, $6, $6) RETURNING *`,
      [f.userId, f.friendlyName, f.type, f.secret ?? null, f.phone ?? null, f.now],
    );
    return row;
  }

  /**
   * Sets the friendly name and/or the phone of factor `id` of `userId` (a field left
   * undefined keeps its value); the updated row, or null when there is no such factor.
   */
  async updateOfUser(
    userId: string,
    id: string,
    f: { friendlyName?: string; phone?: string; now: Date },
    q: Queryable = this.#db,
  ): Promise<FactorRow | null> {
    const [row] = await q.query<FactorRow>(
      `UPDATE ${this.#factors}
       SET friendly_name = COALESCE($3, friendly_name), phone = COALESCE($4, phone), updated_at = $5
       WHERE id = $1 AND user_id = $2 RETURNING *`,
      [id, userId, f.friendlyName ?? null, f.phone ?? null, f.now],
    );
    return row ?? null;
  }

  /** Deletes factor `id` of `userId`; the deleted row, or null when there was none. */
  async deleteOfUser(
    userId: string,
    id: string,
    q: Queryable = this.#db,
  ): Promise<FactorRow | null> {
    const [row] = await q.query<FactorRow>(
      `DELETE FROM ${this.#factors} WHERE id = $1 AND user_id = $2 RETURNING *`,
      [id, userId],
    );
    return row ?? null;
  }

  /** Deletes every factor of a user (their challenges go with them). */
  async deleteByUser(userId: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#factors} WHERE user_id = $1`, [userId]);
  }

  async markChallenged(id: string, now: Date, q: Queryable = this.#db): Promise<void> {
    await q.query(
      `UPDATE ${this.#factors} SET last_challenged_at = $2, updated_at = $2 WHERE id = $1`,
      [id, now],
    );
  }

  /**
   * Records TOTP time step `step` as used, in one conditional UPDATE: false
   * when this step or a later one was used before (across processes too).
   */
  async useTotpStep(id: string, step: number, q: Queryable = this.#db): Promise<boolean> {
    const fresh = await q.query(
      `UPDATE ${this.#factors} SET last_totp_step = $2
       WHERE id = $1 AND (last_totp_step IS NULL OR last_totp_step < $2) RETURNING id`,
      [id, step],
    );
    return fresh.length > 0;
  }

  /** Marks an unverified factor verified; true when this call changed it. */
  async markVerified(id: string, now: Date, q: Queryable = this.#db): Promise<boolean> {
    const upgraded = await q.query(
      `UPDATE ${this.#factors} SET status = 'verified', updated_at = $2
       WHERE id = $1 AND status = 'unverified' RETURNING id`,
      [id, now],
    );
    return upgraded.length > 0;
  }
}

/** MFA challenges of one database. */
export class ChallengeStore {
  readonly #db: Db;
  readonly #challenges: string;

  constructor(db: Db) {
    this.#db = db;
    this.#challenges = db.t("mfa_challenges");
  }

  /** Removes the factor's challenges created before `before`. */
  async deleteOfFactorBefore(
    factorId: string,
    before: Date,
    q: Queryable = this.#db,
  ): Promise<void> {
    await q.query(`DELETE FROM ${this.#challenges} WHERE factor_id = $1 AND created_at < $2`, [
      factorId,
      before,
    ]);
  }

  /** The factor's unanswered challenges created after `since`: how many, and the oldest's time. */
  async countOpen(
    factorId: string,
    since: Date,
    q: Queryable = this.#db,
  ): Promise<{ n: number; oldest: Date | null }> {
    const [r] = await q.query<{ n: number; oldest: Date | null }>(
      `SELECT count(*)::int AS n, min(created_at) AS oldest FROM ${this.#challenges}
       WHERE factor_id = $1 AND verified_at IS NULL AND created_at > $2`,
      [factorId, since],
    );
    return r;
  }

  async insert(
    factorId: string,
    ip: string,
    now: Date,
    q: Queryable = this.#db,
  ): Promise<ChallengeRow> {
    const [row] = await q.query<ChallengeRow>(
      `INSERT INTO ${this.#challenges} (factor_id, ip_address, created_at)
       VALUES ($1, $2, $3) RETURNING *`,
      [factorId, ip, now],
    );
    return row;
  }

  async setCodeHash(id: string, codeHash: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`UPDATE ${this.#challenges} SET otp_code_hash = $2 WHERE id = $1`, [
      id,
      codeHash,
    ]);
  }

  async findById(id: string, q: Queryable = this.#db): Promise<ChallengeRow | null> {
    const rows = await q.query<ChallengeRow>(
      `SELECT * FROM ${this.#challenges} WHERE id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Challenge `id` of factor `factorId`, or null. */
  async findOfFactor(
    factorId: string,
    id: string,
    q: Queryable = this.#db,
  ): Promise<ChallengeRow | null> {
    const rows = await q.query<ChallengeRow>(
      `SELECT * FROM ${this.#challenges} WHERE id = $1 AND factor_id = $2`,
      [id, factorId],
    );
    return rows[0] ?? null;
  }

  async deleteById(id: string, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#challenges} WHERE id = $1`, [id]);
  }

  /**
   * Takes one attempt of an unanswered challenge, atomically: false when it
   * has `maxAttempts` already or was answered.
   */
  async takeAttempt(id: string, maxAttempts: number, q: Queryable = this.#db): Promise<boolean> {
    const took = await q.query(
      `UPDATE ${this.#challenges} SET attempts = attempts + 1
       WHERE id = $1 AND attempts < $2 AND verified_at IS NULL RETURNING id`,
      [id, maxAttempts],
    );
    return took.length > 0;
  }

  /** Marks the challenge answered; false when it was answered before. */
  async markVerified(id: string, now: Date, q: Queryable = this.#db): Promise<boolean> {
    const used = await q.query(
      `UPDATE ${this.#challenges} SET verified_at = $2 WHERE id = $1 AND verified_at IS NULL RETURNING id`,
      [id, now],
    );
    return used.length > 0;
  }
}

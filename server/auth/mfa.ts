/**
 * Multi-factor authentication factors (TOTP and phone) over the mfa_factors
 * table, the way GoTrue models them: a factor starts `unverified`; the first
 * successful verification (auth/mfa_challenges.ts) makes it `verified`.
 * TOTP secrets are returned once, in the enrollment answer, and never again.
 * Deleting a factor drops the sessions raised with it back to aal1.
 */
import { ApiError } from "../api/errors.ts";
import type { Config } from "../config.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { isoString } from "../util/time.ts";
import { amrMethod, MfaChallenges } from "./mfa_challenges.ts";
import { lockUserProfile } from "./users.ts";
import type { SessionRow } from "./sessions.ts";

export { amrMethod, OPEN_CHALLENGES_PER_FACTOR, type Verified } from "./mfa_challenges.ts";

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

const iso = (d: Date | null) => (d ? isoString(d instanceof Date ? d : new Date(d)) : undefined);

/** A factor as GoTrue shows it (never its secret). */
export function factorToJson(f: FactorRow): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: f.id,
    friendly_name: f.friendly_name,
    factor_type: f.factor_type,
    status: f.status,
    created_at: iso(f.created_at),
    updated_at: iso(f.updated_at),
  };
  if (f.factor_type === "phone") out.phone = f.phone ?? "";
  if (f.last_challenged_at) out.last_challenged_at = iso(f.last_challenged_at);
  return out;
}

/** Factors and challenges of one database. */
export class Mfa {
  readonly factors: string;
  readonly sessions: string;
  /** Challenges and verification (auth/mfa_challenges.ts). */
  readonly challenges: MfaChallenges;

  constructor(readonly db: Db, readonly config: Config, readonly clock: Clock) {
    this.factors = db.t("mfa_factors");
    this.sessions = db.t("sessions");
    this.challenges = new MfaChallenges(db, config, clock);
  }

  async listFactors(userId: string, q: Queryable = this.db): Promise<FactorRow[]> {
    return await q.query<FactorRow>(
      `SELECT * FROM ${this.factors} WHERE user_id = $1 ORDER BY created_at, id`,
      [userId],
    );
  }

  /** The factors as JSON, or undefined when there are none (GoTrue omits the member). */
  async factorsJson(
    userId: string,
    q: Queryable = this.db,
  ): Promise<Record<string, unknown>[] | undefined> {
    const rows = await this.listFactors(userId, q);
    return rows.length ? rows.map(factorToJson) : undefined;
  }

  /** A factor of this user, or 404 mfa_factor_not_found. */
  async ownedFactor(userId: string, factorId: string, q: Queryable = this.db): Promise<FactorRow> {
    const rows = await q.query<FactorRow>(
      `SELECT * FROM ${this.factors} WHERE id = $1 AND user_id = $2`,
      [factorId, userId],
    );
    if (!rows[0]) throw new ApiError(404, "mfa_factor_not_found", "Factor not found");
    return rows[0];
  }

  /** True when the user has at least one verified factor. */
  async hasVerifiedFactor(userId: string, q: Queryable = this.db): Promise<boolean> {
    const [r] = await q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.factors} WHERE user_id = $1 AND status = 'verified'`,
      [userId],
    );
    return r.n > 0;
  }

  /**
   * Checks the enrollment rules and inserts an unverified factor. Unverified
   * factors older than the challenge expiry are dropped first (an enrollment
   * nobody finished); an unverified phone factor for the same number is
   * replaced, a verified one is a 422 mfa_verified_factor_exists.
   */
  async enroll(
    userId: string,
    session: SessionRow,
    f: { type: FactorType; friendlyName: string; secret?: string; phone?: string },
  ): Promise<FactorRow> {
    const now = this.clock.now();
    const staleBefore = new Date(now.getTime() - this.config.mfa.challengeExpiry * 1000);
    return await this.db.transaction(async (tx) => {
      // Serialise enrollments of one user so the count below holds; the user row is written
      // before its factors (lock order, migrations/0009_profile_rev.sql).
      await lockUserProfile(tx, this.db.t("users"), userId);
      await tx.query(
        `DELETE FROM ${this.factors} WHERE user_id = $1 AND status = 'unverified' AND created_at < $2`,
        [userId, staleBefore],
      );
      if (f.type === "phone") {
        const same = await tx.query<FactorRow>(
          `SELECT * FROM ${this.factors} WHERE user_id = $1 AND factor_type = 'phone' AND phone = $2`,
          [userId, f.phone],
        );
        if (same.some((x) => x.status === "verified")) {
          throw new ApiError(
            422,
            "mfa_verified_factor_exists",
            "A verified phone factor already exists, unenroll the existing factor to continue",
          );
        }
        await tx.query(
          `DELETE FROM ${this.factors} WHERE user_id = $1 AND factor_type = 'phone' AND phone = $2`,
          [userId, f.phone],
        );
      }
      const existing = await this.listFactors(userId, tx);
      if (f.friendlyName && existing.some((x) => x.friendly_name === f.friendlyName)) {
        throw new ApiError(
          422,
          "mfa_factor_name_conflict",
          `A factor with the friendly name "${f.friendlyName}" for this user already exists`,
        );
      }
      if (existing.length >= this.config.mfa.maxEnrolledFactors) {
        throw new ApiError(
          422,
          "too_many_enrolled_mfa_factors",
          `Maximum number of enrolled factors (${this.config.mfa.maxEnrolledFactors}) reached, unenroll to continue`,
        );
      }
      if (existing.some((x) => x.status === "verified") && session.aal !== "aal2") {
        throw new ApiError(403, "insufficient_aal", "AAL2 required to enroll a new factor");
      }
      const [row] = await tx.query<FactorRow>(
        `INSERT INTO ${this.factors} (user_id, friendly_name, factor_type, status, secret, phone, created_at, updated_at)
         VALUES ($1, $2, $3, 'unverified', $4, $5, $6, $6) RETURNING *`,
        [userId, f.friendlyName, f.type, f.secret ?? null, f.phone ?? null, now],
      );
      return row;
    });
  }

  /**
   * Deletes a factor; sessions raised with it fall back to aal1 and lose its
   * amr entry. Returns the deleted row, or 404 mfa_factor_not_found.
   */
  async deleteFactor(userId: string, factorId: string): Promise<FactorRow> {
    return await this.db.transaction(async (tx) => {
      await lockUserProfile(tx, this.db.t("users"), userId); // the user row first (lock order)
      const [row] = await tx.query<FactorRow>(
        `DELETE FROM ${this.factors} WHERE id = $1 AND user_id = $2 RETURNING *`,
        [factorId, userId],
      );
      if (!row) throw new ApiError(404, "mfa_factor_not_found", "Factor not found");
      await tx.query(
        `UPDATE ${this.sessions} SET aal = 'aal1', factor_id = NULL, updated_at = $4,
           amr = (SELECT COALESCE(jsonb_agg(e), '[]'::jsonb) FROM jsonb_array_elements(amr) AS e
                  WHERE e->>'method' <> $3)
         WHERE user_id = $1 AND factor_id = $2`,
        [userId, factorId, amrMethod(row.factor_type), this.clock.now()],
      );
      return row;
    });
  }
}

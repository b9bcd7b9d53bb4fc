/**
 * Multi-factor authentication: factors (TOTP and phone) and their challenges
 * over the mfa_factors / mfa_challenges tables, and the session step-up to
 * `aal2`, the way GoTrue models them.
 *
 * - A factor starts `unverified`; the first successful verification makes it
 *   `verified`. Either way a successful verification raises the caller's
 *   session to `aal2` with the factor's method in `amr`.
 * - A challenge is answered at most once, from the IP address that created
 *   it, within MFA_CHALLENGE_EXPIRY_DURATION, with at most MFA_MAX_ATTEMPTS
 *   codes. The attempt is counted (atomically, in the database) before the
 *   code is checked, so parallel guesses cannot exceed the bound either.
 * - A TOTP code is accepted once: the factor remembers the last time step
 *   used (`last_totp_step`) and a code of that step or an earlier one is
 *   refused, across processes, by one conditional UPDATE.
 * - TOTP secrets are returned once, in the enrollment answer; phone codes are
 *   stored only as an HMAC keyed by a server secret.
 */
import { ApiError, tooManyRequests } from "../api/errors.ts";
import type { Config } from "../config.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { hmacBase64url, hmacKey, timingSafeEqual } from "./crypto.ts";
import type { AmrEntry, SessionRow } from "./sessions.ts";
import { totpMatch } from "./totp.ts";

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

/** Unanswered challenges a factor may have within the challenge expiry (see assertCanChallenge). */
export const OPEN_CHALLENGES_PER_FACTOR = 10;

/** The amr method a verified factor adds to the session (GoTrue's names). */
export function amrMethod(type: FactorType): string {
  return type === "totp" ? "totp" : "mfa/phone";
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : undefined);

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

/** The outcome of a successful verification. */
export interface Verified {
  factor: FactorRow;
  session: SessionRow;
  /** True when this verification turned an unverified factor into a verified one. */
  newlyVerified: boolean;
}

/** Factors and challenges of one database. */
export class Mfa {
  readonly factors: string;
  readonly challenges: string;
  readonly sessions: string;
  #codeKey: Promise<CryptoKey>;

  constructor(readonly db: Db, readonly config: Config, readonly clock: Clock) {
    this.factors = db.t("mfa_factors");
    this.challenges = db.t("mfa_challenges");
    this.sessions = db.t("sessions");
    this.#codeKey = hmacKey(`mfa-phone-code:${config.jwt.secret}`);
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
      // Serialise enrollments of one user so the count below holds.
      await tx.query(`SELECT id FROM ${this.db.t("users")} WHERE id = $1 FOR UPDATE`, [userId]);
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
   * Refuses a new challenge (429 over_request_rate_limit) while the factor has
   * OPEN_CHALLENGES_PER_FACTOR unanswered challenges younger than the expiry:
   * each allows MFA_MAX_ATTEMPTS codes, so this bounds the guesses per factor
   * and window however many clients or addresses ask. Call it before sending
   * anything. Long-expired challenges of the factor are removed here.
   */
  async assertCanChallenge(factor: FactorRow): Promise<void> {
    const now = this.clock.now().getTime();
    const window = this.config.mfa.challengeExpiry * 1000;
    await this.db.query(`DELETE FROM ${this.challenges} WHERE factor_id = $1 AND created_at < $2`, [
      factor.id,
      new Date(now - 2 * window),
    ]);
    const [r] = await this.db.query<{ n: number; oldest: Date | null }>(
      `SELECT count(*)::int AS n, min(created_at) AS oldest FROM ${this.challenges}
       WHERE factor_id = $1 AND verified_at IS NULL AND created_at > $2`,
      [factor.id, new Date(now - window)],
    );
    if (r.n >= OPEN_CHALLENGES_PER_FACTOR) {
      const wait = Math.max(1, Math.ceil((new Date(r.oldest!).getTime() + window - now) / 1000));
      throw tooManyRequests(
        "over_request_rate_limit",
        `Too many open challenges for this factor, try again in ${wait} seconds`,
        wait,
      );
    }
  }

  /**
   * Creates a challenge. For a phone factor `code` is the code being sent;
   * only its HMAC is stored.
   */
  async createChallenge(factor: FactorRow, ip: string, code?: string): Promise<ChallengeRow> {
    const now = this.clock.now();
    return await this.db.transaction(async (tx) => {
      const [row] = await tx.query<ChallengeRow>(
        `INSERT INTO ${this.challenges} (factor_id, ip_address, created_at)
         VALUES ($1, $2, $3) RETURNING *`,
        [factor.id, ip, now],
      );
      if (code !== undefined) {
        await tx.query(`UPDATE ${this.challenges} SET otp_code_hash = $2 WHERE id = $1`, [
          row.id,
          await this.#codeHash(row.id, code),
        ]);
      }
      await tx.query(
        `UPDATE ${this.factors} SET last_challenged_at = $2, updated_at = $2 WHERE id = $1`,
        [factor.id, now],
      );
      return row;
    });
  }

  /** When a challenge stops being answerable (epoch seconds). */
  expiresAt(c: ChallengeRow): number {
    return Math.floor(new Date(c.created_at).getTime() / 1000) + this.config.mfa.challengeExpiry;
  }

  /**
   * Verifies `code` for a challenge of `factor` and raises `sessionId` to
   * aal2. Errors are GoTrue's: 422 mfa_factor_not_found (unknown challenge),
   * mfa_ip_address_mismatch, mfa_challenge_expired, mfa_verification_failed;
   * 429 mfa_verification_rejected once the challenge's attempts are spent.
   */
  async verify(
    factor: FactorRow,
    sessionId: string,
    challengeId: string,
    code: string,
    ip: string,
  ): Promise<Verified> {
    const now = this.clock.now();
    const [challenge] = await this.db.query<ChallengeRow>(
      `SELECT * FROM ${this.challenges} WHERE id = $1 AND factor_id = $2`,
      [challengeId, factor.id],
    );
    if (!challenge) {
      throw new ApiError(
        422,
        "mfa_factor_not_found",
        "MFA factor with the provided challenge ID not found",
      );
    }
    if (challenge.verified_at) {
      throw new ApiError(
        422,
        "mfa_challenge_expired",
        `MFA challenge ${challenge.id} has already been used, create a new challenge`,
      );
    }
    if (challenge.ip_address !== ip) {
      throw new ApiError(
        422,
        "mfa_ip_address_mismatch",
        "Challenge and verify IP addresses mismatch",
      );
    }
    if (now.getTime() / 1000 >= this.expiresAt(challenge)) {
      await this.db.query(`DELETE FROM ${this.challenges} WHERE id = $1`, [challenge.id]);
      throw new ApiError(
        422,
        "mfa_challenge_expired",
        `MFA challenge ${challenge.id} has expired, verify against another challenge or create a new challenge`,
      );
    }
    // Count the attempt before looking at the code: concurrent guesses each take one.
    const took = await this.db.query(
      `UPDATE ${this.challenges} SET attempts = attempts + 1
       WHERE id = $1 AND attempts < $2 AND verified_at IS NULL RETURNING id`,
      [challenge.id, this.config.mfa.maxAttempts],
    );
    if (!took.length) {
      throw new ApiError(
        429,
        "mfa_verification_rejected",
        `Too many attempts for MFA challenge ${challenge.id}, create a new challenge`,
      );
    }
    let step: number | null = null;
    if (factor.factor_type === "totp") {
      step = await totpMatch(factor.secret ?? "", code, now.getTime() / 1000);
      if (step === null) {
        throw new ApiError(422, "mfa_verification_failed", "Invalid TOTP code entered");
      }
    } else {
      const ok = challenge.otp_code_hash !== null &&
        timingSafeEqual(challenge.otp_code_hash, await this.#codeHash(challenge.id, code));
      if (!ok) {
        throw new ApiError(422, "mfa_verification_failed", "Invalid MFA Phone code entered");
      }
    }
    return await this.db.transaction(async (tx) => {
      const used = await tx.query(
        `UPDATE ${this.challenges} SET verified_at = $2 WHERE id = $1 AND verified_at IS NULL RETURNING id`,
        [challenge.id, now],
      );
      if (!used.length) {
        throw new ApiError(
          422,
          "mfa_challenge_expired",
          `MFA challenge ${challenge.id} has already been used, create a new challenge`,
        );
      }
      if (step !== null) {
        const fresh = await tx.query(
          `UPDATE ${this.factors} SET last_totp_step = $2
           WHERE id = $1 AND (last_totp_step IS NULL OR last_totp_step < $2) RETURNING id`,
          [factor.id, step],
        );
        if (!fresh.length) {
          throw new ApiError(
            422,
            "mfa_verification_failed",
            "This TOTP code has already been used, wait for the next one",
          );
        }
      }
      const upgraded = await tx.query<FactorRow>(
        `UPDATE ${this.factors} SET status = 'verified', updated_at = $2
         WHERE id = $1 AND status = 'unverified' RETURNING *`,
        [factor.id, now],
      );
      const session = await this.#stepUp(tx, factor, sessionId, now);
      // GoTrue: sessions that never passed MFA end once the user has a verified factor,
      // and other unfinished enrollments of the same type are dropped.
      await tx.query(
        `DELETE FROM ${this.sessions} WHERE user_id = $1 AND id <> $2 AND aal = 'aal1'`,
        [factor.user_id, sessionId],
      );
      await tx.query(
        `DELETE FROM ${this.factors}
         WHERE user_id = $1 AND id <> $2 AND factor_type = $3 AND status = 'unverified'`,
        [factor.user_id, factor.id, factor.factor_type],
      );
      const [current] = await tx.query<FactorRow>(
        `SELECT * FROM ${this.factors} WHERE id = $1`,
        [factor.id],
      );
      return { factor: current, session, newlyVerified: upgraded.length > 0 };
    });
  }

  /** Sets aal2, the factor, and the factor's amr entry (most recent first, one per method). */
  async #stepUp(tx: Queryable, factor: FactorRow, sessionId: string, now: Date) {
    const [s] = await tx.query<SessionRow>(
      `SELECT * FROM ${this.sessions} WHERE id = $1 FOR UPDATE`,
      [sessionId],
    );
    if (!s) {
      throw new ApiError(
        403,
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
    const method = amrMethod(factor.factor_type);
    const amr: AmrEntry[] = [
      { method, timestamp: Math.floor(now.getTime() / 1000) },
      ...(s.amr ?? []).filter((e) => e.method !== method),
    ];
    const [updated] = await tx.query<SessionRow>(
      `UPDATE ${this.sessions} SET aal = 'aal2', factor_id = $2, amr = $3, updated_at = $4
       WHERE id = $1 RETURNING *`,
      [sessionId, factor.id, JSON.stringify(amr), now],
    );
    return updated;
  }

  /**
   * Deletes a factor; sessions raised with it fall back to aal1 and lose its
   * amr entry. Returns the deleted row, or 404 mfa_factor_not_found.
   */
  async deleteFactor(userId: string, factorId: string): Promise<FactorRow> {
    return await this.db.transaction(async (tx) => {
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

  async #codeHash(challengeId: string, code: string): Promise<string> {
    return await hmacBase64url(await this.#codeKey, `${challengeId}:${code}`);
  }
}

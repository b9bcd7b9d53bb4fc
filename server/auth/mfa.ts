/**
 * Multi-factor authentication factors (TOTP and phone) over the mfa_factors
 * table, the way GoTrue models them: a factor starts `unverified`; the first
 * successful verification (auth/mfa_challenges.ts) makes it `verified`.
 * TOTP secrets are returned once, in the enrollment answer, and never again.
 * Deleting a factor drops the sessions raised with it back to aal1.
 */
import { AuthError } from "./errors.ts";
import type { Config } from "../config/mod.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { amrMethod, MfaChallenges } from "./mfa_challenges.ts";
import type { Users } from "./users.ts";
import type { SessionRow } from "../store/sessions.ts";
import { type FactorRow, FactorStore, type FactorType } from "../store/factors.ts";
import { SessionStore } from "../store/sessions.ts";

export { amrMethod, OPEN_CHALLENGES_PER_FACTOR, type Verified } from "./mfa_challenges.ts";

export type { ChallengeRow, FactorRow, FactorType } from "../store/factors.ts";

const iso = (d: Date | null) => d ? (d instanceof Date ? d : new Date(d)).toISOString() : undefined;

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
  /**
   * @deprecated The factors table's name, for api/user_profile.ts until its
   * query moves into server/store; nothing new may use it.
   */
  readonly factors: string;
  /** Challenges and verification (auth/mfa_challenges.ts). */
  readonly challenges: MfaChallenges;
  readonly #factors: FactorStore;
  readonly #sessions: SessionStore;

  constructor(
    readonly db: Db,
    readonly config: Config,
    readonly clock: Clock,
    readonly users: Pick<Users, "lockProfile">,
  ) {
    this.factors = db.t("mfa_factors");
    this.#factors = new FactorStore(db);
    this.#sessions = new SessionStore(db);
    this.challenges = new MfaChallenges(db, config, clock, users);
  }

  async listFactors(userId: string, q: Queryable = this.db): Promise<FactorRow[]> {
    return await this.#factors.listByUser(userId, q);
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
    const row = await this.#factors.findOfUser(userId, factorId, q);
    if (!row) throw new AuthError("mfa_factor_not_found", "Factor not found");
    return row;
  }

  /** True when the user has at least one verified factor. */
  async hasVerifiedFactor(userId: string, q: Queryable = this.db): Promise<boolean> {
    return await this.#factors.countVerified(userId, q) > 0;
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
      await this.users.lockProfile(userId, tx);
      await this.#factors.deleteUnverifiedBefore(userId, staleBefore, tx);
      if (f.type === "phone") {
        const same = await this.#factors.findPhone(userId, f.phone ?? null, tx);
        if (same.some((x) => x.status === "verified")) {
          throw new AuthError(
            "mfa_verified_factor_exists",
            "A verified phone factor already exists, unenroll the existing factor to continue",
          );
        }
        await this.#factors.deletePhone(userId, f.phone ?? null, tx);
      }
      const existing = await this.listFactors(userId, tx);
      if (f.friendlyName && existing.some((x) => x.friendly_name === f.friendlyName)) {
        throw new AuthError(
          "mfa_factor_name_conflict",
          `A factor with the friendly name "${f.friendlyName}" for this user already exists`,
        );
      }
      if (existing.length >= this.config.mfa.maxEnrolledFactors) {
        throw new AuthError(
          "too_many_enrolled_mfa_factors",
          `Maximum number of enrolled factors (${this.config.mfa.maxEnrolledFactors}) reached, unenroll to continue`,
        );
      }
      if (existing.some((x) => x.status === "verified") && session.aal !== "aal2") {
        throw new AuthError("insufficient_aal", "AAL2 required to enroll a new factor");
      }
      return await this.#factors.insert({ userId, ...f, now }, tx);
    });
  }

  /**
   * Deletes a factor; sessions raised with it fall back to aal1 and lose its
   * amr entry. Returns the deleted row, or 404 mfa_factor_not_found.
   */
  async deleteFactor(userId: string, factorId: string): Promise<FactorRow> {
    return await this.db.transaction(async (tx) => {
      await this.users.lockProfile(userId, tx); // the user row first (lock order)
      const row = await this.#factors.deleteOfUser(userId, factorId, tx);
      if (!row) throw new AuthError("mfa_factor_not_found", "Factor not found");
      await this.#sessions.lowerFromFactor(
        userId,
        factorId,
        amrMethod(row.factor_type),
        this.clock.now(),
        tx,
      );
      return row;
    });
  }

  /**
   * The admin's factor update (GoTrue's adminUserUpdateFactor): a new friendly name, and a
   * new number for a phone factor (ignored for other factors, as GoTrue). The updated row;
   * 404 mfa_factor_not_found; 422 mfa_factor_name_conflict when another factor of the user
   * has the name; 422 mfa_verified_factor_exists when another verified phone factor has
   * the number.
   */
  async updateFactor(
    userId: string,
    factorId: string,
    f: { friendlyName?: string; phone?: string },
  ): Promise<FactorRow> {
    return await this.db.transaction(async (tx) => {
      await this.users.lockProfile(userId, tx); // the user row first (lock order)
      const row = await this.ownedFactor(userId, factorId, tx);
      const phone = row.factor_type === "phone" ? f.phone : undefined;
      const others = (await this.listFactors(userId, tx)).filter((x) => x.id !== row.id);
      if (f.friendlyName && others.some((x) => x.friendly_name === f.friendlyName)) {
        throw new AuthError(
          "mfa_factor_name_conflict",
          `A factor with the friendly name "${f.friendlyName}" for this user already exists`,
        );
      }
      if (phone && others.some((x) => x.phone === phone && x.status === "verified")) {
        throw new AuthError(
          "mfa_verified_factor_exists",
          "A verified phone factor with this number already exists for this user",
        );
      }
      const updated = await this.#factors.updateOfUser(userId, row.id, {
        friendlyName: f.friendlyName || undefined,
        phone,
        now: this.clock.now(),
      }, tx);
      return updated ?? row;
    });
  }

  /**
   * Deletes every factor of a user (their challenges go with them), in `q`:
   * for code that ends what others may hold on an account (auth/confirm.ts).
   */
  async deleteAllFactors(userId: string, q: Queryable = this.db): Promise<void> {
    await this.#factors.deleteByUser(userId, q);
  }
}

/**
 * MFA challenges: created per factor, answered at most once, from the IP
 * address that created them, within MFA_CHALLENGE_EXPIRY_DURATION, with at
 * most MFA_MAX_ATTEMPTS codes. The attempt is counted (atomically, in the
 * database) before the code is checked, so parallel guesses cannot exceed the
 * bound; at most OPEN_CHALLENGES_PER_FACTOR may be open per factor, so the
 * guesses per factor are bounded too.
 *
 * A TOTP code is accepted once: the factor remembers the last time step used
 * (`last_totp_step`) and a code of that step or an earlier one is refused,
 * across processes, by one conditional UPDATE. Phone codes are stored only as
 * an HMAC keyed by a server secret.
 *
 * A successful verification raises the caller's session to aal2 with the
 * factor's method first in `amr`.
 */
import { AuthError } from "./errors.ts";
import type { Config } from "../config/mod.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { hmacBase64url, type HmacKey, hmacKey, timingSafeEqual } from "../util/crypto.ts";
import type { ChallengeRow, FactorRow, FactorType } from "../store/factors.ts";
import type { AmrEntry, SessionRow } from "../store/sessions.ts";
import { totpMatch } from "./totp.ts";
import type { Users } from "./users.ts";
import { ChallengeStore, FactorStore } from "../store/factors.ts";
import { SessionStore } from "../store/sessions.ts";

/** Unanswered challenges a factor may have within the challenge expiry (see assertCanChallenge). */
export const OPEN_CHALLENGES_PER_FACTOR = 10;

/** The amr method a verified factor adds to the session (GoTrue's names). */
export function amrMethod(type: FactorType): string {
  return type === "totp" ? "totp" : "mfa/phone";
}

/** The outcome of a successful verification. */
export interface Verified {
  factor: FactorRow;
  session: SessionRow;
  /** True when this verification turned an unverified factor into a verified one. */
  newlyVerified: boolean;
}

/** Challenges of one database. */
export class MfaChallenges {
  /** Told of every checked code before it counts; may throw to reject (set by buildServices). */
  onAttempt?: (factor: FactorRow, valid: boolean, ip: string) => Promise<void>;
  #codeKey: HmacKey;
  readonly #challenges: ChallengeStore;
  readonly #factors: FactorStore;
  readonly #sessions: SessionStore;

  constructor(
    readonly db: Db,
    readonly config: Config,
    readonly clock: Clock,
    readonly users: Pick<Users, "lockProfile">,
  ) {
    this.#challenges = new ChallengeStore(db);
    this.#factors = new FactorStore(db);
    this.#sessions = new SessionStore(db);
    this.#codeKey = hmacKey(`mfa-phone-code:${config.jwt.secret}`);
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
    await this.#challenges.deleteOfFactorBefore(factor.id, new Date(now - 2 * window));
    const r = await this.#challenges.countOpen(factor.id, new Date(now - window));
    if (r.n >= OPEN_CHALLENGES_PER_FACTOR) {
      const wait = Math.max(1, Math.ceil((new Date(r.oldest!).getTime() + window - now) / 1000));
      throw new AuthError(
        "over_request_rate_limit",
        `Too many open challenges for this factor, try again in ${wait} seconds`,
        { retryAfterSec: wait },
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
      // The user row before the factor's (lock order, migrations/0009_profile_rev.sql).
      await this.users.lockProfile(factor.user_id, tx);
      const row = await this.#challenges.insert(factor.id, ip, now, tx);
      if (code !== undefined) {
        await this.#challenges.setCodeHash(row.id, this.#codeHash(row.id, code), tx);
      }
      await this.#factors.markChallenged(factor.id, now, tx);
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
    const challenge = await this.#challenges.findOfFactor(factor.id, challengeId);
    if (!challenge) {
      throw new AuthError(
        "mfa_factor_not_found",
        "MFA factor with the provided challenge ID not found",
        { situation: "challenge" },
      );
    }
    if (challenge.verified_at) {
      throw alreadyUsed(challenge.id);
    }
    if (challenge.ip_address !== ip) {
      throw new AuthError("mfa_ip_address_mismatch", "Challenge and verify IP addresses mismatch");
    }
    if (now.getTime() / 1000 >= this.expiresAt(challenge)) {
      await this.#challenges.deleteById(challenge.id);
      throw new AuthError(
        "mfa_challenge_expired",
        `MFA challenge ${challenge.id} has expired, verify against another challenge or create a new challenge`,
      );
    }
    // Count the attempt before looking at the code: concurrent guesses each take one.
    const took = await this.#challenges.takeAttempt(challenge.id, this.config.mfa.maxAttempts);
    if (!took) {
      const current = await this.#challenges.findById(challenge.id);
      if (!current || current.verified_at) throw alreadyUsed(challenge.id);
      throw new AuthError(
        "mfa_verification_rejected",
        `Too many attempts for MFA challenge ${challenge.id}, create a new challenge`,
      );
    }
    let step: number | null = null;
    let valid: boolean;
    if (factor.factor_type === "totp") {
      step = await totpMatch(factor.secret ?? "", code, now.getTime() / 1000);
      valid = step !== null;
    } else {
      valid = challenge.otp_code_hash !== null &&
        timingSafeEqual(challenge.otp_code_hash, this.#codeHash(challenge.id, code));
    }
    // The MFA verification attempt hook may reject (auth/hooks_install.ts).
    await this.onAttempt?.(factor, valid, ip);
    if (!valid) {
      throw new AuthError(
        "mfa_verification_failed",
        factor.factor_type === "totp"
          ? "Invalid TOTP code entered"
          : "Invalid MFA Phone code entered",
      );
    }
    return await this.db.transaction(async (tx) => {
      await this.users.lockProfile(factor.user_id, tx); // the user row first
      const used = await this.#challenges.markVerified(challenge.id, now, tx);
      if (!used) {
        throw alreadyUsed(challenge.id);
      }
      if (step !== null) {
        const fresh = await this.#factors.useTotpStep(factor.id, step, tx);
        if (!fresh) {
          throw new AuthError(
            "mfa_verification_failed",
            "This TOTP code has already been used, wait for the next one",
          );
        }
      }
      const upgraded = await this.#factors.markVerified(factor.id, now, tx);
      const session = await this.#stepUp(tx, factor, sessionId, now);
      // GoTrue: sessions that never passed MFA end once the user has a verified factor,
      // and other unfinished enrollments of the same type are dropped.
      await this.#sessions.deleteOtherAal1OfUser(factor.user_id, sessionId, tx);
      await this.#factors.deleteOtherUnverified(
        factor.user_id,
        factor.id,
        factor.factor_type,
        tx,
      );
      const current = (await this.#factors.findById(factor.id, tx))!;
      return { factor: current, session, newlyVerified: upgraded };
    });
  }

  /** Sets aal2, the factor, and the factor's amr entry (most recent first, one per method). */
  async #stepUp(tx: Queryable, factor: FactorRow, sessionId: string, now: Date) {
    const s = await this.#sessions.lockById(sessionId, tx);
    if (!s) {
      throw new AuthError(
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
    const method = amrMethod(factor.factor_type);
    const amr: AmrEntry[] = [
      { method, timestamp: Math.floor(now.getTime() / 1000) },
      ...(s.amr ?? []).filter((e) => e.method !== method),
    ];
    return (await this.#sessions.raiseToAal2(sessionId, factor.id, amr, now, tx))!;
  }

  #codeHash(challengeId: string, code: string): string {
    return hmacBase64url(this.#codeKey, `${challengeId}:${code}`);
  }
}

/** A challenge answered before: 422 mfa_challenge_expired. */
function alreadyUsed(id: string): AuthError {
  return new AuthError(
    "mfa_challenge_expired",
    `MFA challenge ${id} has already been used, create a new challenge`,
  );
}

/**
 * Sessions, refresh tokens and the token set a sign-in answers with.
 *
 * Refresh tokens are opaque random strings stored only as SHA-256 hashes. A
 * rotated token's child is derived from the parent token itself
 * (HMAC-SHA256 keyed by a server secret), so exchanging the immediately
 * previous token again within the reuse interval returns the very same child
 * without the server ever storing a token in the clear (spec 5.5).
 *
 * Concurrency: an exchange runs in one transaction that locks the session row
 * (`SELECT ... FOR UPDATE`), so every exchange within one token family is
 * serialised, across processes too: the second of two concurrent exchanges of
 * the same token sees it revoked with a live child inside the interval and
 * returns that child.
 */
import { ApiError } from "../api/errors.ts";
import type { Config } from "../config.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { hmacBase64url, hmacKey, randomToken, sha256Hex } from "./crypto.ts";
import type { JwtService } from "./jwt.ts";
import { type UserRow, type Users, userToJson } from "./users.ts";

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

interface RefreshRow {
  id: number;
  token_hash: string;
  user_id: string;
  session_id: string;
  parent_id: number | null;
  revoked: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The answer of a sign-in or refresh. */
export interface TokenSet {
  access_token: string;
  token_type: "bearer";
  expires_in: number;
  expires_at: number;
  refresh_token: string;
  user: Record<string, unknown>;
  [extra: string]: unknown;
}

/** How a session was authenticated. */
export interface IssueOpts {
  /** amr method: password, otp, magiclink, oauth, anonymous, invite, recovery, email/signup, sms_otp ... */
  method: string;
  provider?: string;
  userAgent?: string;
  ip?: string;
}

/** 403 user_banned, GoTrue's answer to a banned user wherever tokens would be issued. */
export function bannedError(): ApiError {
  return new ApiError(403, "user_banned", "User is banned");
}

/** True while `user` is banned at `now`. */
export function isBanned(user: Pick<UserRow, "banned_until">, now: Date): boolean {
  return !!user.banned_until && new Date(user.banned_until) > now;
}

/**
 * 400 refresh_token_already_used, carrying whose session it was and whether
 * this reuse revoked the session's whole token family (so /token can audit it).
 */
export class RefreshTokenReusedError extends ApiError {
  constructor(readonly session: SessionRow, readonly familyRevoked: boolean) {
    super(400, "refresh_token_already_used", "Invalid Refresh Token: Already Used");
  }
}

/** Session and refresh-token service. */
export class Sessions {
  readonly sessions: string;
  readonly refreshTokens: string;
  /** Lists a user's MFA factors for the user in token sets (set by buildServices). */
  factorsOf?: (userId: string, q: Queryable) => Promise<Record<string, unknown>[] | undefined>;
  #childKey: Promise<CryptoKey>;

  constructor(
    readonly db: Db,
    readonly config: Config,
    readonly jwt: JwtService,
    readonly users: Users,
    readonly clock: Clock,
  ) {
    this.sessions = db.t("sessions");
    this.refreshTokens = db.t("refresh_tokens");
    this.#childKey = hmacKey(`refresh-token-child:${config.jwt.secret}`);
  }

  /** Starts a new session for a user and answers with a token set. Updates last_sign_in_at. */
  async issue(user: UserRow, opts: IssueOpts, q: Queryable = this.db): Promise<TokenSet> {
    const now = this.clock.now();
    const amr: AmrEntry[] = [{ method: opts.method, timestamp: Math.floor(now.getTime() / 1000) }];
    if (opts.provider) amr[0].provider = opts.provider;
    const token = randomToken(32);
    // One statement: the session and its refresh token exist only for a user who is not
    // banned (nor deleted) as the database has it now. The share lock on the user row
    // orders this against a ban (admin.ts updates the row, then deletes the sessions, in
    // one transaction): a sign-in that read the row first is ended by the ban, one that
    // comes after sees it. Every path that issues tokens goes through here.
    const [session] = await q.query<SessionRow>(
      `WITH u AS (
         SELECT id FROM ${this.users.table} WHERE id = $1 AND deleted_at IS NULL
           AND (banned_until IS NULL OR banned_until <= $5) FOR SHARE
       ), s AS (
         INSERT INTO ${this.sessions} (user_id, aal, amr, user_agent, ip, created_at, updated_at)
         SELECT u.id, 'aal1', $2, $3, $4, $5, $5 FROM u RETURNING *
       ), r AS (
         INSERT INTO ${this.refreshTokens} (token_hash, user_id, session_id, created_at, updated_at)
         SELECT $6, s.user_id, s.id, $5, $5 FROM s
       )
       SELECT * FROM s`,
      [
        user.id,
        JSON.stringify(amr),
        opts.userAgent ?? null,
        opts.ip ?? null,
        now,
        await sha256Hex(token),
      ],
    );
    if (!session) throw await this.#notIssued(user.id, q);
    const fresh = await this.users.update(user.id, { last_sign_in_at: now }, q) ?? user;
    return await this.tokenSet(fresh, session, token, q);
  }

  /**
   * A new refresh token inside an existing session (after an MFA step-up the
   * session's aal/amr changed and the client gets fresh tokens for it).
   */
  async reissue(user: UserRow, session: SessionRow, q: Queryable = this.db): Promise<TokenSet> {
    const now = this.clock.now();
    const token = randomToken(32);
    // As in issue(): nothing for a banned user, in one statement (an MFA verification of a
    // user banned meanwhile gets no tokens); a session that ended meanwhile gets none either.
    const [done] = await q.query<{ id: number }>(
      `WITH u AS (
         SELECT id FROM ${this.users.table} WHERE id = $1 AND deleted_at IS NULL
           AND (banned_until IS NULL OR banned_until <= $3) FOR SHARE
       ), s AS (
         SELECT id FROM ${this.sessions} WHERE id = $2 AND user_id IN (SELECT id FROM u)
         FOR UPDATE
       ), old AS (
         UPDATE ${this.refreshTokens} SET revoked = true, updated_at = $3
         WHERE session_id IN (SELECT id FROM s) AND NOT revoked
       )
       INSERT INTO ${this.refreshTokens} (token_hash, user_id, session_id, created_at, updated_at)
       SELECT $4, $1, s.id, $3, $3 FROM s RETURNING id`,
      [user.id, session.id, now, await sha256Hex(token)],
    );
    if (!done) throw await this.#notIssued(user.id, q, session.id);
    return await this.tokenSet(user, session, token, q);
  }

  /** Why no tokens were issued: 403 user_banned, user_not_found or session_not_found. */
  async #notIssued(userId: string, q: Queryable, sessionId?: string): Promise<ApiError> {
    const user = await this.users.findById(userId, q);
    if (!user) return new ApiError(404, "user_not_found", "User not found");
    if (user.banned_until && new Date(user.banned_until) > this.clock.now()) {
      return bannedError();
    }
    if (sessionId) {
      return new ApiError(
        403,
        "session_not_found",
        "Session from session_id claim in JWT does not exist",
      );
    }
    return bannedError();
  }

  /** Builds the token set: signs an access token for the session. */
  async tokenSet(
    user: UserRow,
    session: SessionRow,
    refreshToken: string,
    q: Queryable = this.db,
  ): Promise<TokenSet> {
    const { token, exp } = await this.accessToken(user, session);
    const identities = await this.users.listIdentities(user.id, q);
    const factors = await this.factorsOf?.(user.id, q);
    return {
      access_token: token,
      token_type: "bearer",
      expires_in: this.config.jwt.exp,
      expires_at: exp,
      refresh_token: refreshToken,
      user: userToJson(user, { identities, factors }),
    };
  }

  /** Signs an access token with the contract's claims. */
  async accessToken(user: UserRow, session: SessionRow): Promise<{ token: string; exp: number }> {
    const iat = Math.floor(this.clock.now().getTime() / 1000);
    const exp = iat + this.config.jwt.exp;
    const token = await this.jwt.sign({
      sub: user.id,
      aud: user.aud || this.config.jwt.aud,
      exp,
      iat,
      email: user.email ?? "",
      phone: user.phone ?? "",
      app_metadata: user.raw_app_meta_data ?? {},
      user_metadata: user.raw_user_meta_data ?? {},
      role: user.role || "authenticated",
      aal: session.aal,
      amr: session.amr,
      session_id: session.id,
      is_anonymous: user.is_anonymous,
    });
    return { token, exp };
  }

  async findSession(id: string, q: Queryable = this.db): Promise<SessionRow | null> {
    const rows = await q.query<SessionRow>(`SELECT * FROM ${this.sessions} WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** The refresh_token grant, with rotation and reuse detection (spec 5.5). */
  async refresh(token: string): Promise<TokenSet> {
    if (typeof token !== "string" || token.length === 0 || token.length > 512) {
      throw new ApiError(400, "validation_failed", "refresh_token is required");
    }
    const hash = await sha256Hex(token);
    const outcome = await this.db.transaction(async (tx) => {
      const found = await tx.query<RefreshRow>(
        `SELECT * FROM ${this.refreshTokens} WHERE token_hash = $1`,
        [hash],
      );
      if (!found[0]) return { error: "not_found" as const };
      // Lock the session: every exchange in this family is serialised here.
      const sessions = await tx.query<SessionRow>(
        `SELECT * FROM ${this.sessions} WHERE id = $1 FOR UPDATE`,
        [
          found[0].session_id,
        ],
      );
      const session = sessions[0];
      if (!session) return { error: "not_found" as const };
      const [rt] = await tx.query<RefreshRow>(`SELECT * FROM ${this.refreshTokens} WHERE id = $1`, [
        found[0].id,
      ]);
      const user = await this.users.findById(rt.user_id, tx);
      if (!user) return { error: "not_found" as const };
      const now = this.clock.now();
      if (user.banned_until && new Date(user.banned_until) > now) {
        return { error: "banned" as const };
      }
      if (session.not_after && new Date(session.not_after) <= now) {
        return { error: "expired" as const };
      }

      const rotation = this.config.security.refreshTokenRotationEnabled;
      let plain: string;
      if (!rotation) {
        if (rt.revoked) return { error: "reused" as const, session };
        plain = token;
      } else if (!rt.revoked) {
        plain = await hmacBase64url(await this.#childKey, token);
        await tx.query(
          `UPDATE ${this.refreshTokens} SET revoked = true, updated_at = $2 WHERE id = $1`,
          [rt.id, now],
        );
        await tx.query(
          `INSERT INTO ${this.refreshTokens} (token_hash, user_id, session_id, parent_id, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $5)`,
          [await sha256Hex(plain), rt.user_id, rt.session_id, rt.id, now],
        );
      } else {
        const [child] = await tx.query<RefreshRow>(
          `SELECT * FROM ${this.refreshTokens} WHERE parent_id = $1 ORDER BY id DESC LIMIT 1`,
          [rt.id],
        );
        const ageSec = (now.getTime() - new Date(rt.updated_at).getTime()) / 1000;
        plain = await hmacBase64url(await this.#childKey, token);
        const sameChild = child && !child.revoked && child.token_hash === await sha256Hex(plain);
        if (!sameChild || ageSec > this.config.security.refreshTokenReuseInterval) {
          // Reuse outside the interval, or of an older token: revoke the whole family.
          await tx.query(
            `UPDATE ${this.refreshTokens} SET revoked = true, updated_at = $2 WHERE session_id = $1`,
            [
              session.id,
              now,
            ],
          );
          await tx.query(`DELETE FROM ${this.sessions} WHERE id = $1`, [session.id]);
          return { error: "reused" as const, session, familyRevoked: true };
        }
      }
      await tx.query(
        `UPDATE ${this.sessions} SET refreshed_at = $2, updated_at = $2 WHERE id = $1`,
        [
          session.id,
          now,
        ],
      );
      return { set: await this.tokenSet(user, session, plain, tx), session };
    });
    if ("set" in outcome && outcome.set) return outcome.set;
    switch (outcome.error) {
      case "banned":
        throw new ApiError(400, "user_banned", "User is banned");
      case "expired":
        throw new ApiError(400, "session_expired", "Invalid Refresh Token: Session Expired");
      case "reused":
        throw new RefreshTokenReusedError(
          outcome.session,
          "familyRevoked" in outcome && outcome.familyRevoked === true,
        );
      default:
        throw new ApiError(
          400,
          "refresh_token_not_found",
          "Invalid Refresh Token: Refresh Token Not Found",
        );
    }
  }

  /**
   * Ends every session of a user (their refresh tokens go with them), in `q`:
   * a ban does it in the transaction that bans (api/admin.ts).
   */
  async endAll(userId: string, q: Queryable = this.db): Promise<void> {
    await q.query(`DELETE FROM ${this.sessions} WHERE user_id = $1`, [userId]);
  }

  /**
   * Signs out: `local` ends this session, `others` every other session of the
   * user, `global` all of them. Refresh tokens of ended sessions stop working;
   * issued access tokens stay valid until they expire, but protected calls
   * with them answer session_not_found.
   */
  async logout(
    userId: string,
    sessionId: string | undefined,
    scope: "global" | "local" | "others",
  ): Promise<void> {
    if (scope === "global" || !sessionId) {
      await this.db.query(`DELETE FROM ${this.sessions} WHERE user_id = $1`, [userId]);
    } else if (scope === "local") {
      await this.db.query(`DELETE FROM ${this.sessions} WHERE id = $1 AND user_id = $2`, [
        sessionId,
        userId,
      ]);
    } else {
      await this.db.query(`DELETE FROM ${this.sessions} WHERE user_id = $1 AND id <> $2`, [
        userId,
        sessionId,
      ]);
    }
  }
}

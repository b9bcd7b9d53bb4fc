/**
 * Sessions, refresh tokens and the token set a sign-in answers with.
 *
 * Refresh tokens are random strings stamped with their time of issue,
 * stored only under a key made of the stamp and their SHA-256 hash
 * (auth/refresh_token_format.ts). A rotated token's child is derived from the parent token itself
 * (HMAC-SHA256 keyed by a server secret), so a used token that is exchanged
 * again gets the session's live token, rebuilt from it through the chain of
 * children, without the server ever storing a token in the clear. What an
 * exchange does is decided by auth/refresh_policy.ts; the SQL is in
 * store/sessions.ts and store/refresh_tokens.ts.
 *
 * Concurrency: an exchange locks the session row (`FOR UPDATE`), in the one
 * statement of its common case (store/refresh_tokens.ts `rotateLive`) or in
 * the transaction of every other case, so every exchange within one token
 * family is serialised, across processes too: the second of two concurrent
 * exchanges of the same token finds it revoked (the statement changes
 * nothing), and the transaction then finds the live child and returns it.
 */
import { AuthError } from "./errors.ts";
import { SessionTokens, type TokenSet } from "./session_tokens.ts";
import type { Queryable } from "../db/db.ts";
import type { AmrEntry, SessionRow } from "../store/sessions.ts";
import { hmacBase64url, randomToken } from "../util/crypto.ts";
import { refreshTokenKey } from "./refresh_token_format.ts";
import { decideRefresh, MAX_GENERATIONS, reuseWindowEnd } from "./refresh_policy.ts";
import { liveTokenOf } from "./refresh_chain.ts";
import {
  sessionExpiredMessage,
  sessionValidity,
  supersededByNewerSession,
} from "./session_limits.ts";
import { type IdentityRow, type LocalProvider, type UserFields, type UserRow } from "./users.ts";
import { type AuditEntry, auditPayload } from "./audit.ts";
import { factorToJson } from "./mfa.ts";
import { bannedError } from "./ban.ts";
import type { FactorRow } from "../store/factors.ts";

export type { AmrEntry, SessionRow } from "../store/sessions.ts";

export { type TokenSet, tokenSetJson } from "./session_tokens.ts";

/** How a session was authenticated. */
export interface IssueOpts {
  /** amr method: password, otp, magiclink, oauth, anonymous, invite, recovery, email/signup, sms_otp ... */
  method: string;
  provider?: string;
  userAgent?: string;
  ip?: string;
  /** The audit entry of the sign-in, written with the session (its ip: `ip`). */
  audit?: Omit<AuditEntry, "ip">;
}

/**
 * 400 refresh_token_already_used, carrying whose session it was and whether
 * this reuse revoked the session's whole token family (so /token can audit it).
 */
export class RefreshTokenReusedError extends AuthError {
  constructor(readonly session: SessionRow, readonly familyRevoked: boolean) {
    super("refresh_token_already_used", "Invalid Refresh Token: Already Used");
  }
}

/** Session and refresh-token service. */
export class Sessions extends SessionTokens {
  /**
   * Starts a new session for a user and answers with a token set. Updates
   * last_sign_in_at, and writes `opts.audit` (its ip: `opts.ip`) with the
   * session: one statement (SessionStore.startSignIn).
   */
  async issue(user: UserRow, opts: IssueOpts, q: Queryable = this.db): Promise<TokenSet> {
    const now = this.clock.now();
    const amr: AmrEntry[] = [{ method: opts.method, timestamp: Math.floor(now.getTime() / 1000) }];
    if (opts.provider) amr[0].provider = opts.provider;
    const token = this.newToken(randomToken(32), now);
    const tx = q === this.db ? undefined : q;
    const audit = opts.audit && this.audit ? auditPayload(opts.audit) : undefined;
    // Nothing for a banned (or deleted) user, decided in the statement that inserts: every
    // path that issues tokens goes through here.
    const started = await this.store.startSignIn({
      userId: user.id,
      amr,
      userAgent: opts.userAgent,
      ip: opts.ip,
      now,
      refreshTokenHash: refreshTokenKey(token),
      audit: audit && { payload: audit, ip: opts.ip ?? "" },
    }, tx);
    if (!started) throw await this.notIssued(user.id, q);
    if (audit) this.audit!.recorded(audit);
    const factors = started.factors as unknown as FactorRow[];
    return await this.answer(started.user as unknown as UserRow, started.session, token, {
      identities: started.identities as unknown as IdentityRow[],
      factors: factors.length ? factors.map(factorToJson) : undefined,
    }, tx);
  }

  /**
   * Creates a user with its `email` / `phone` identities (as
   * Users.createWithIdentities) and starts its first session, answering with
   * the token set: one statement (SessionStore.startSignUp), with
   * `opts.audit` written for the new user (its actor: the user). Not for a
   * creation the before_user_created hook must see first. A unique
   * violation (the address is someone's) propagates; nothing is written then.
   */
  async signUp(
    fields: UserFields,
    providers: LocalProvider[],
    opts: IssueOpts,
  ): Promise<{ user: UserRow; set: TokenSet }> {
    const now = this.clock.now();
    const amr: AmrEntry[] = [{ method: opts.method, timestamp: Math.floor(now.getTime() / 1000) }];
    if (opts.provider) amr[0].provider = opts.provider;
    const token = this.newToken(randomToken(32), now);
    const local = this.users.localUser(fields, providers);
    const audit = opts.audit && this.audit
      ? auditPayload({
        ...opts.audit,
        actorId: local.fields.id,
        actorUsername: local.fields.email ?? local.fields.phone ?? "",
      })
      : undefined;
    const started = await this.store.startSignUp(local.fields, local.identities, {
      userId: local.fields.id,
      amr,
      userAgent: opts.userAgent,
      ip: opts.ip,
      now,
      refreshTokenHash: refreshTokenKey(token),
      audit: audit && { payload: audit, ip: opts.ip ?? "" },
    });
    if (audit) this.audit!.recorded(audit);
    const user = started.user as unknown as UserRow;
    const set = await this.answer(user, started.session, token, {
      identities: started.identities as unknown as IdentityRow[],
    });
    return { user, set };
  }

  /**
   * A new refresh token inside an existing session (after an MFA step-up the
   * session's aal/amr changed and the client gets fresh tokens for it).
   */
  async reissue(user: UserRow, session: SessionRow, q: Queryable = this.db): Promise<TokenSet> {
    const now = this.clock.now();
    const token = this.newToken(randomToken(32), now);
    // As in issue(): nothing for a banned user, in one statement (an MFA verification of a
    // user banned meanwhile gets no tokens); a session that ended meanwhile gets none either.
    const done = await this.tokens.replaceInSession(
      user.id,
      session.id,
      refreshTokenKey(token),
      now,
      q,
    );
    if (!done) throw await this.notIssued(user.id, q, session.id);
    return await this.tokenSet(user, session, token, q);
  }

  async findSession(id: string, q: Queryable = this.db): Promise<SessionRow | null> {
    return await this.store.findById(id, q);
  }

  /**
   * The refresh_token grant, with rotation and reuse detection
   * (auth/refresh_policy.ts), and its `token_refreshed` audit entry (from
   * `ctx.ip`) in the same transaction.
   *
   * The policy's common case, a live token of a session and user in good
   * standing with rotation on (`rotate`), is tried first as one statement
   * (RefreshTokenStore.rotateLive: one round trip and one commit instead of
   * a transaction of ten). Whenever that statement changes nothing (the
   * token is unknown or revoked, the session ended or expired, the user is
   * banned, or a concurrent exchange got there first), the exchange reads
   * the rows under the session's lock and asks decideRefresh, as below.
   */
  async refresh(token: string, ctx: { ip?: string } = {}): Promise<TokenSet> {
    if (typeof token !== "string" || token.length === 0 || token.length > 512) {
      throw new AuthError("validation_failed", "refresh_token is required", {
        situation: "oauth",
      });
    }
    const hash = refreshTokenKey(token);
    const settings = {
      rotationEnabled: this.config.security.refreshTokenRotationEnabled,
      reuseIntervalSec: this.config.security.refreshTokenReuseInterval,
    };
    const audit = this.audit;
    const entry = { action: "token_refreshed", logType: "token" } as const;
    const limits = this.config.sessions;
    // With SESSIONS_SINGLE_PER_USER the decision reads the user's other sessions: the
    // transaction below makes it.
    if (settings.rotationEnabled && audit && !limits.singlePerUser) {
      const now = this.clock.now();
      const plain = this.newToken(hmacBase64url(this.childKey, token), now);
      const payload = auditPayload(entry);
      const done = await this.tokens.rotateLive({
        hash,
        childHash: refreshTokenKey(plain),
        now,
        timeboxSec: limits.timeboxSec,
        inactivityTimeoutSec: limits.inactivityTimeoutSec,
        auditPayload: payload,
        ip: ctx.ip ?? "",
      });
      if (done) {
        const user = done.user as unknown as UserRow;
        audit.recorded({
          ...payload,
          actor_id: user.id,
          actor_username: user.email || user.phone || "",
        });
        const factors = done.factors as unknown as FactorRow[];
        return await this.answer(user, done.session, plain, {
          identities: done.identities as unknown as IdentityRow[],
          factors: factors.length ? factors.map(factorToJson) : undefined,
        });
      }
    }
    const outcome = await this.db.transaction(async (tx) => {
      const found = await this.tokens.findByHash(hash, tx);
      if (!found) return { error: "not_found" as const };
      // Lock the session: every exchange in this family is serialised here, and the token is
      // read again under the lock (a concurrent exchange may have rotated it meanwhile).
      const session = await this.store.lockById(found.session_id, tx);
      if (!session) return { error: "not_found" as const };
      const rt = await this.tokens.findById(found.id, tx);
      const user = rt && await this.users.findById(rt.user_id, tx);
      const now = this.clock.now();
      // A live token rotates into the child it derives; a revoked one may lead to the live
      // token, whose text is rebuilt from this one (auth/refresh_policy.ts decides whether it
      // is handed out).
      const current = rt?.revoked && settings.rotationEnabled
        ? liveTokenOf(
          token,
          rt.id,
          await this.tokens.descendants(
            rt.id,
            rt.session_id,
            reuseWindowEnd(rt, settings),
            MAX_GENERATIONS,
            tx,
          ),
          (text, key) => this.childOf(text, now, key),
        )
        : null;
      const plain = rt === null || !settings.rotationEnabled
        ? token
        : rt.revoked
        ? current?.token ?? token
        : this.childOf(token, now);
      const decision = decideRefresh(
        { token: rt, session, user, current, now },
        settings,
      );
      if (decision !== "not_found" && decision !== "banned" && decision !== "expired") {
        // SESSIONS_TIMEBOX, SESSIONS_INACTIVITY_TIMEOUT, SESSIONS_SINGLE_PER_USER, checked
        // before reuse detection as GoTrue does (auth/session_limits.ts).
        const validity = sessionValidity(limits, session, now, rt!.updated_at);
        if (validity !== "valid") return { error: "limit" as const, why: validity };
        if (limits.singlePerUser) {
          const others = await this.store.listByUser(session.user_id, now, 1000, tx);
          if (supersededByNewerSession(limits, session, others, now, rt!.updated_at)) {
            return { error: "limit" as const, why: "superseded" as const };
          }
        }
      }
      switch (decision) {
        case "not_found":
        case "banned":
        case "expired":
          return { error: decision };
        case "reused":
          return { error: "reused" as const, session };
        case "revoke_family":
          await this.tokens.revokeFamily(session.id, now, tx);
          return { error: "reused" as const, session, familyRevoked: true };
        case "rotate":
          await this.tokens.rotate(rt!, refreshTokenKey(plain), now, tx);
          break;
        case "keep":
        case "return_current":
          break;
      }
      await this.store.markRefreshed(session.id, now, tx);
      await audit?.record({
        ...entry,
        actorId: user!.id,
        actorUsername: user!.email || user!.phone || "",
        ip: ctx.ip,
      }, tx);
      return { set: await this.tokenSet(user!, session, plain, tx), session };
    });
    if ("set" in outcome && outcome.set) return outcome.set;
    switch (outcome.error) {
      case "banned":
        throw bannedError("oauth");
      case "expired":
        throw new AuthError("session_expired", "Invalid Refresh Token: Session Expired");
      case "limit":
        throw new AuthError("session_expired", sessionExpiredMessage(outcome.why));
      case "reused":
        throw new RefreshTokenReusedError(
          outcome.session,
          "familyRevoked" in outcome && outcome.familyRevoked === true,
        );
      default:
        throw new AuthError(
          "refresh_token_not_found",
          "Invalid Refresh Token: Refresh Token Not Found",
        );
    }
  }

  /**
   * Ends every session of a user (their refresh tokens go with them), in `q`:
   * a ban does it in the transaction that bans (api/admin.ts).
   */
  /** A user's current sessions, newest first (the console's user page). */
  async listOf(userId: string, limit = 100): Promise<SessionRow[]> {
    return await this.store.listByUser(userId, this.clock.now(), limit);
  }

  async endAll(userId: string, q: Queryable = this.db): Promise<void> {
    await this.store.deleteByUser(userId, q);
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
      await this.store.deleteByUser(userId);
    } else if (scope === "local") {
      await this.store.deleteOfUser(userId, sessionId);
    } else {
      await this.store.deleteOthersOfUser(userId, sessionId);
    }
  }
}

/**
 * What every way of handing out tokens shares (Sessions, sessions.ts): the
 * new refresh token's format, a rotated token's child, the token set of a
 * session (the signed access token and the user) and its JSON text.
 */
import { AuthError } from "./errors.ts";
import type { Config } from "../config/mod.ts";
import type { Db, Queryable } from "../db/db.ts";
import { RefreshTokenStore } from "../store/refresh_tokens.ts";
import { type SessionRow, SessionStore } from "../store/sessions.ts";
import type { Clock } from "./clock.ts";
import { hmacBase64url, type HmacKey, hmacKey } from "../util/crypto.ts";
import { stampedRefreshToken, stampOfKey } from "./refresh_token_format.ts";
import type { JwtService } from "./jwt.ts";
import { type IdentityRow, type UserRow, type Users, userToJson } from "./users.ts";
import type { AuditLog } from "./audit.ts";
import { bannedError, isBanned } from "./ban.ts";

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

/** The token set's JSON text (api/headers.ts tokenSetResponse answers it). */
export function tokenSetJson(set: TokenSet): string {
  return JSON.stringify(set);
}

/** The token-issuing core that Sessions builds on. */
export class SessionTokens {
  /**
   * @deprecated The sessions table's name, for api/user_profile.ts until its
   * query moves into server/store; nothing new may use it.
   */
  readonly sessions: string;
  /** Records the refresh grant's audit entries (set by buildServices). */
  audit?: AuditLog;
  /** Lists a user's MFA factors for the user in token sets (set by buildServices). */
  factorsOf?: (userId: string, q: Queryable) => Promise<Record<string, unknown>[] | undefined>;
  /** The custom access token hook, when enabled (auth/hooks.ts; set by buildServices). */
  customizeClaims?: (
    user: UserRow,
    session: SessionRow,
    claims: Record<string, unknown>,
    tx?: Queryable,
  ) => Promise<Record<string, unknown>>;
  protected readonly childKey: HmacKey;
  protected readonly store: SessionStore;
  protected readonly tokens: RefreshTokenStore;

  constructor(
    readonly db: Db,
    readonly config: Config,
    readonly jwt: JwtService,
    readonly users: Users,
    readonly clock: Clock,
  ) {
    this.sessions = db.t("sessions");
    this.store = new SessionStore(db);
    this.tokens = new RefreshTokenStore(db);
    this.childKey = hmacKey(`refresh-token-child:${config.jwt.secret}`);
  }

  /**
   * A new refresh token made of `secret`, issued `now`: stamped, unless
   * SECURITY_REFRESH_TOKEN_STAMPED is off (servers of before, which know only
   * the bare format, still run beside this one).
   */
  protected newToken(secret: string, now: Date): string {
    return this.config.security.refreshTokenStamped ? stampedRefreshToken(secret, now) : secret;
  }

  /**
   * The child `token` derives: the HMAC of `token` under the server's child key, stamped
   * with `now`, or with the stamp of `storedChildKey` (the key of the child already stored;
   * none: the child of a token issued before stamps, kept as it was handed out).
   */
  protected childOf(token: string, now: Date, storedChildKey?: string): string {
    const secret = hmacBase64url(this.childKey, token);
    if (storedChildKey === undefined) return this.newToken(secret, now);
    const stamp = stampOfKey(storedChildKey);
    return stamp === null ? secret : stampedRefreshToken(secret, { stamp });
  }

  /** Why no tokens were issued: user_banned, user_not_found or session_not_found. */
  protected async notIssued(userId: string, q: Queryable, sessionId?: string): Promise<AuthError> {
    const user = await this.users.findById(userId, q);
    if (!user) return new AuthError("user_not_found", "User not found");
    if (isBanned(user, this.clock.now())) return bannedError();
    if (sessionId) {
      return new AuthError(
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
    const identities = await this.users.listIdentities(user.id, q);
    const factors = await this.factorsOf?.(user.id, q);
    const tx = q === this.db ? undefined : q;
    return await this.answer(user, session, refreshToken, { identities, factors }, tx);
  }

  /** The token set from rows already read; `tx`: the open transaction, if any (hooks run in it). */
  protected async answer(
    user: UserRow,
    session: SessionRow,
    refreshToken: string,
    { identities, factors }: { identities: IdentityRow[]; factors?: Record<string, unknown>[] },
    tx?: Queryable,
  ): Promise<TokenSet> {
    const { token, exp } = await this.accessToken(user, session, tx);
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
  async accessToken(
    user: UserRow,
    session: SessionRow,
    /** The open transaction the token is issued in, if any (a pg-functions hook runs in it). */
    tx?: Queryable,
  ): Promise<{ token: string; exp: number }> {
    const iat = Math.floor(this.clock.now().getTime() / 1000);
    const exp = iat + this.config.jwt.exp;
    let claims: Record<string, unknown> = {
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
    };
    if (this.customizeClaims) claims = await this.customizeClaims(user, session, claims, tx);
    const token = await this.jwt.sign(claims);
    return { token, exp: typeof claims.exp === "number" ? claims.exp : exp };
  }
}

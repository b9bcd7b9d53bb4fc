/**
 * One-time tokens: e-mail links and codes, SMS codes, reauthentication
 * nonces. Shared by the e-mail and phone flows.
 *
 * Every issued token is one row of `one_time_tokens` holding only hashes:
 * - `token_hash`: SHA-256 (hex) of a 28-byte random link secret (56 hex digits, GoTrue's format), the value a
 *   mail puts in `?token=` (and `{{ .TokenHash }}`); high entropy, so it is
 *   looked up by its hash directly.
 * - `code_hash`: HMAC-SHA256 keyed by a server secret of the token type, the
 *   recipient and the numeric code a user types. A short code is checked in
 *   constant time against the rows of that recipient, and every wrong guess
 *   counts: after `maxAttempts` wrong codes the token is dead.
 *
 * A token expires at `expires_at`, is consumed by the first successful
 * verification (`DELETE ... RETURNING`, so two processes cannot both consume
 * it), and issuing a new token of one type for one user replaces the old one.
 *
 * API (all failures of verification throw AuthError `otp_expired`,
 * "Token has expired or is invalid", the same for wrong, used and expired):
 *
 *   const otp = s.otp; // new OneTimeTokens(db, config.jwt.secret, clock)
 *   // e-mail: a link secret and a 6-digit code in the same mail
 *   const t = await otp.issue({ userId, type: "confirmation", recipient: "a@x.io",
 *     ttlSec: config.mailer.otpExp, codeLength: 6 });
 *   t.link;  // put in the URL; t.code: the digits to show; neither is stored
 *   // SMS: a code only
 *   const c = await otp.issue({ userId, type: "sms", recipient: "15551234567",
 *     ttlSec: config.sms.otpExp, codeLength: config.sms.otpLength, link: false });
 *   // verification consumes the token and returns its row
 *   const row = await otp.verifyLink(["confirmation", "magiclink"], tokenFromUrl);
 *   const row2 = await otp.verifyCode(["sms"], "15551234567", "123456",
 *     { maxAttempts: config.sms.maxAttempts });
 *   await otp.revoke(userId, "sms"); // drop a user's pending tokens of a type
 *
 * `recipient` is the address or number the token was sent to (lower-case
 * e-mail, or E.164 digits without "+"), stored in `relates_to`; `data` keeps
 * what verification needs later (a PKCE flow id, redirect_to).
 */
import { AuthError } from "./errors.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import {
  hmacBase64url,
  type HmacKey,
  hmacKey,
  randomDigits,
  randomHex,
  sha256Hex,
  timingSafeEqual,
} from "../util/crypto.ts";
import { type OneTimeTokenRow, OneTimeTokenStore } from "../store/one_time_tokens.ts";

export type { OneTimeTokenRow } from "../store/one_time_tokens.ts";

/** Token types; the e-mail ones, then the phone ones. Any string is accepted. */
export type TokenType =
  | "confirmation"
  | "invite"
  | "recovery"
  | "magiclink"
  | "email_change_new"
  | "email_change_current"
  | "reauthentication"
  | "sms"
  | "phone_change"
  | (string & Record<never, never>);

/** What `issue` needs. */
export interface IssueTokenOptions {
  userId: string;
  type: TokenType;
  /** Address or number the token goes to. */
  recipient: string;
  /** Validity in seconds. */
  ttlSec: number;
  /** Digits of the code (default 6). */
  codeLength?: number;
  /** Whether a link secret is made too (default true; false for SMS codes and nonces). */
  link?: boolean;
  data?: Record<string, unknown>;
  /**
   * True: the user's other pending tokens of this type stay, and later
   * tokens of the type do not replace this one either (each repeated
   * sign-up's own confirmation, auth/confirm.ts). Default false.
   */
  alongside?: boolean;
}

/** An issued token: the secrets to deliver, shown once. */
export interface IssuedToken {
  id: string;
  /** The link secret (only when `link` was not false). */
  link?: string;
  /** SHA-256 hex of the link secret (what the row stores). */
  linkHash: string;
  /** The numeric code. */
  code: string;
  expiresAt: Date;
}

/** 403 otp_expired, GoTrue's answer for any unusable token. */
export function otpInvalid(): AuthError {
  return new AuthError("otp_expired", "Token has expired or is invalid");
}

/** Issues, verifies and consumes one-time tokens. */
export class OneTimeTokens {
  #key: HmacKey;
  readonly #store: OneTimeTokenStore;

  constructor(readonly db: Db, secret: string, readonly clock: Clock) {
    this.#store = new OneTimeTokenStore(db);
    this.#key = hmacKey(`one-time-code:${secret}`);
  }

  #codeHash(type: string, recipient: string, code: string): string {
    return hmacBase64url(this.#key, `${type}\n${recipient}\n${code}`);
  }

  /** Issues a token, replacing the user's pending tokens of the same type. */
  async issue(o: IssueTokenOptions, q: Queryable = this.db): Promise<IssuedToken> {
    const now = this.clock.now();
    // GoTrue's token_hash is 56 lower-case hex digits (a SHA-224); ours has
    // that format but is 28 random bytes rather than a hash of address and code.
    const link = randomHex(28);
    const code = randomDigits(o.codeLength ?? 6);
    const linkHash = sha256Hex(link);
    const expiresAt = new Date(now.getTime() + o.ttlSec * 1000);
    // The user's previous token of this type goes (unless issued alongside), and so do
    // their expired ones.
    await this.#store.deleteReplacedAndExpired(o.userId, o.type, !o.alongside, now, q);
    const id = await this.#store.insert({
      userId: o.userId,
      type: o.type,
      tokenHash: linkHash,
      codeHash: this.#codeHash(o.type, o.recipient, code),
      recipient: o.recipient,
      data: o.alongside ? { ...o.data, alongside: true } : (o.data ?? {}),
      now,
      expiresAt,
    }, q);
    return { id, link: o.link === false ? undefined : link, linkHash, code, expiresAt };
  }

  /**
   * Consumes the token whose link secret is `token` (what a mail's link and
   * `{{ .TokenHash }}` carry), if its type is one of `types`.
   */
  async verifyLink(
    types: readonly string[],
    token: string,
    q: Queryable = this.db,
  ): Promise<OneTimeTokenRow> {
    token = withoutPkcePrefix(token);
    if (!token || token.length > 200 || types.length === 0) throw otpInvalid();
    const hash = sha256Hex(token);
    const row = await this.#store.consumeByHash(hash, types, q);
    if (!row || new Date(row.expires_at) <= this.clock.now()) throw otpInvalid();
    return row;
  }

  /** Looks a link token up without consuming it (null when unusable). */
  async peekLink(types: readonly string[], token: string): Promise<OneTimeTokenRow | null> {
    token = withoutPkcePrefix(token);
    if (!token || token.length > 200 || types.length === 0) return null;
    const row = await this.#store.findByHash(sha256Hex(token), types);
    return row && new Date(row.expires_at) > this.clock.now() ? row : null;
  }

  /**
   * Consumes the token of one of `types` sent to `recipient` whose code is
   * `code`. Every guess counts one attempt on each pending token of that
   * recipient and types it is compared with; a token with `maxAttempts`
   * attempts is never compared again and is deleted. `beforeConsume` sees
   * the matching token first and may refuse it (by throwing), which leaves
   * the token as it was.
   */
  async verifyCode(
    types: readonly string[],
    recipient: string,
    code: string,
    opts: {
      maxAttempts?: number;
      beforeConsume?: (row: OneTimeTokenRow) => Promise<void>;
    } = {},
    q: Queryable = this.db,
  ): Promise<OneTimeTokenRow> {
    const maxAttempts = opts.maxAttempts ?? 5;
    if (!code || code.length > 64 || types.length === 0) throw otpInvalid();
    const now = this.clock.now();
    const rows = await this.#store.listCodesFor(recipient, types, now, q);
    // Each guess first takes one attempt of a row (atomically, in the database)
    // and only then compares: however many guesses run at once, in however
    // many processes, at most maxAttempts of them are ever compared with a code.
    let match: OneTimeTokenRow | undefined;
    for (const r of rows) {
      if (match) break;
      if (!await this.#store.takeAttempt(r.id, maxAttempts, q)) continue;
      const h = this.#codeHash(r.token_type, recipient, code.trim());
      if (timingSafeEqual(h, r.code_hash ?? "")) match = r;
    }
    if (match) {
      await opts.beforeConsume?.(match);
      const consumed = await this.#store.consumeById(match.id, q);
      if (consumed) return consumed;
      throw otpInvalid();
    }
    await this.#store.deleteSpent(rows.map((r) => r.id), maxAttempts, q);
    throw otpInvalid();
  }

  /** Drops one token by its id. */
  async revokeId(id: string, q: Queryable = this.db): Promise<void> {
    await this.#store.deleteById(id, q);
  }

  /** Drops a user's pending tokens of the given types (all types when none given). */
  async revoke(userId: string, types: readonly string[] = [], q: Queryable = this.db) {
    await this.#store.deleteByUser(userId, types, q);
  }

  /** The pending token of a user and type (not consumed), or null. */
  async pending(userId: string, type: string): Promise<OneTimeTokenRow | null> {
    return await this.#store.findPending(userId, type, this.clock.now());
  }

  /**
   * The user a token of `types` was sent to `recipient` for (expired tokens
   * count too), or null: who asked for a code, before it is checked.
   */
  async userIdForRecipient(recipient: string, types: readonly string[]): Promise<string | null> {
    if (types.length === 0) return null;
    return await this.#store.findUserIdByRecipient(recipient, types);
  }

  /**
   * The user's tokens of `type` as they are now, for {@link OneTimeTokens.restore}
   * should a token issued next turn out undeliverable.
   */
  async snapshot(userId: string, type: string): Promise<OneTimeTokenRow[]> {
    return await this.#store.listOfUser(userId, type);
  }

  /**
   * Undoes an `issue`: drops token `issuedId` and puts back the tokens a
   * {@link OneTimeTokens.snapshot} taken before it saw (the user's previous
   * code keeps working when the new one could not be sent).
   */
  async restore(issuedId: string, before: readonly OneTimeTokenRow[]): Promise<void> {
    await this.#store.deleteById(issuedId);
    await this.#store.reinsert(before);
  }
}

/** A link token without the "pkce_" prefix a PKCE flow's links carry (auth/action_mail.ts). */
function withoutPkcePrefix(token: string): string {
  return token.startsWith("pkce_") ? token.slice(5) : token;
}

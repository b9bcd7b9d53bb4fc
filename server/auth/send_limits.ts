/**
 * Send limits for e-mail and SMS, counted in the `send_log` table so they hold
 * across server processes, and counting only messages actually sent.
 *
 * Two limits guard each message:
 * - per recipient and kind: at most one message of `kind` to `recipient`
 *   every `intervalSec` seconds (SMTP_MAX_FREQUENCY, SMTP_LINK_FREQUENCY for
 *   magic links and recovery, SMS_MAX_FREQUENCY);
 * - per channel: at most RATE_LIMIT_EMAIL_SENT / RATE_LIMIT_SMS_SENT messages
 *   in their window (an hour by default), over all recipients.
 *
 * Over a limit: 429 `over_email_send_rate_limit` / `over_sms_send_rate_limit`
 * with Retry-After, and nothing is sent.
 *
 * No enumeration: a request for an address without an account goes through
 * `decoy`, which refuses exactly as `send` would (same interval per
 * recipient, same cap) without sending or counting anything, so a 429 does
 * not tell a known address from an unknown one.
 *
 * Concurrency: `send` reserves a send_log row inside a short transaction that
 * holds a transaction-level advisory lock for the channel, so two processes
 * cannot both pass the check for the same slot; the message goes out after the
 * commit, and a failed send deletes its reservation (only mail actually sent
 * counts).
 *
 *   await s.sendLimits.send(
 *     { channel: "sms", recipient: "15551234567", kind: "sms_otp",
 *       intervalSec: config.sms.maxFrequency },
 *     () => provider.send(...),   // throws: reservation dropped, error passes through
 *   );
 */
import { AuthError, type ErrorCode } from "./errors.ts";
import type { Config } from "../config/mod.ts";
import type { Db, Queryable } from "../db/db.ts";
import type { Clock } from "./clock.ts";
import { sha256Hex } from "../util/crypto.ts";
import { SendLogStore } from "../store/send_log.ts";

/** The two channels. */
export type SendChannel = "email" | "sms";

/** One message to be sent. */
export interface SendRequest {
  channel: SendChannel;
  /** Lower-case e-mail address or E.164 digits. */
  recipient: string;
  /** The message kind (confirmation, recovery, magic_link, sms_otp, ...). */
  kind: string;
  /** Seconds between two messages of this kind to this recipient; 0: no per-recipient limit. */
  intervalSec: number;
}

/** How often a process drops send_log rows too old to matter to any limit. */
const PRUNE_EVERY_MS = 10 * 60_000;

/** Database-backed send limits. */
export class SendLimits {
  #lastPrune = 0;
  #horizonSec = 0;
  readonly #log: SendLogStore;

  constructor(readonly db: Db, readonly config: Config, readonly clock: Clock) {
    this.#log = new SendLogStore(db);
  }

  #code(channel: SendChannel): ErrorCode {
    return channel === "email" ? "over_email_send_rate_limit" : "over_sms_send_rate_limit";
  }

  /** Throws the 429 a `send` would throw now, without reserving anything. */
  async check(r: SendRequest): Promise<void> {
    const now = this.clock.now();
    const err = await this.#intervalViolation(this.db, r.channel, r, now) ??
      await this.#capViolation(this.db, r.channel, now);
    if (err) throw err;
  }

  /** 429 when `r.recipient` got a message of `r.kind` on `logChannel` within `r.intervalSec`. */
  async #intervalViolation(
    q: Queryable,
    logChannel: string,
    r: SendRequest,
    now: Date,
  ): Promise<AuthError | null> {
    if (r.intervalSec <= 0) return null;
    const last = await this.#log.lastSentAt(logChannel, r.recipient, r.kind, q);
    if (!last) return null;
    const wait = r.intervalSec - (now.getTime() - new Date(last).getTime()) / 1000;
    if (wait <= 0) return null;
    const secs = Math.max(1, Math.ceil(wait));
    return new AuthError(
      this.#code(r.channel),
      `For security purposes, you can only request this after ${secs} seconds.`,
      { retryAfterSec: secs },
    );
  }

  /** 429 when the channel's hourly cap (RATE_LIMIT_EMAIL_SENT / _SMS_SENT) is reached. */
  async #capViolation(
    q: Queryable,
    channel: SendChannel,
    now: Date,
  ): Promise<AuthError | null> {
    const rate = channel === "email"
      ? this.config.rateLimit.emailSent
      : this.config.rateLimit.smsSent;
    const since = new Date(now.getTime() - rate.windowSec * 1000);
    const row = await this.#log.countSince(channel, since, q);
    if (row.n < rate.count) return null;
    const oldest = row.oldest ? new Date(row.oldest).getTime() : now.getTime();
    const secs = Math.max(1, Math.ceil((oldest + rate.windowSec * 1000 - now.getTime()) / 1000));
    return new AuthError(
      this.#code(channel),
      channel === "email" ? "Email rate limit exceeded" : "SMS rate limit exceeded",
      { retryAfterSec: secs },
    );
  }

  /**
   * Every PRUNE_EVERY_MS, deletes the rows older than the longest interval or
   * window any limit looks back (the table would otherwise only grow).
   */
  async #prune(now: Date, intervalSec: number): Promise<void> {
    const c = this.config;
    this.#horizonSec = Math.max(
      this.#horizonSec,
      intervalSec,
      c.rateLimit.emailSent.windowSec,
      c.rateLimit.smsSent.windowSec,
      c.smtp.maxFrequency,
      c.smtp.linkFrequency,
      c.sms.maxFrequency,
    );
    if (now.getTime() - this.#lastPrune < PRUNE_EVERY_MS) return;
    this.#lastPrune = now.getTime();
    await this.#log.deleteBefore(new Date(now.getTime() - this.#horizonSec * 1000))
      .catch(() => {});
  }

  async #reserve(logChannel: string, r: SendRequest, recipient: string): Promise<number> {
    const now = this.clock.now();
    await this.#prune(now, r.intervalSec);
    return await this.db.transaction(async (tx) => {
      await this.#log.lockChannel(r.channel, tx);
      const err = await this.#intervalViolation(tx, logChannel, { ...r, recipient }, now) ??
        await this.#capViolation(tx, r.channel, now);
      if (err) throw err;
      return await this.#log.insert(logChannel, recipient, r.kind, now, tx);
    });
  }

  /**
   * For a request whose address has no account (or nothing to send): answers
   * as `send` would, 429 within the recipient's interval or over the
   * channel's cap, so a refusal tells nothing about the address. Nothing is
   * sent and nothing counts against the cap; the would-be message is noted
   * under the channel `<channel>_decoy` with the recipient hashed.
   */
  async decoy(r: SendRequest): Promise<void> {
    if (r.intervalSec <= 0) {
      const err = await this.#capViolation(this.db, r.channel, this.clock.now());
      if (err) throw err;
      return;
    }
    await this.#reserve(`${r.channel}_decoy`, r, sha256Hex(r.recipient));
  }

  /**
   * Reserves a slot (429 when over a limit), runs `deliver`, and keeps the
   * slot only when it succeeded.
   */
  async send<T>(r: SendRequest, deliver: () => Promise<T>): Promise<T> {
    const id = await this.#reserve(r.channel, r, r.recipient);
    try {
      return await deliver();
    } catch (e) {
      await this.#log.deleteById(id).catch(() => {});
      throw e;
    }
  }
}

/**
 * Phone numbers and SMS codes: E.164 validation, and `s.sms`, the one service
 * every phone flow (and MFA phone factors) sends and checks codes through.
 *
 * Numbers are stored as GoTrue stores them: E.164 digits without the "+"
 * ("15551234567"). `parsePhone` accepts "+1 555 123 4567", "+1-555-123-4567"
 * and "(+1) 555.123.4567" alike, and refuses anything else with a 422 naming
 * the field.
 *
 * A code goes out through the send limits (auth/send_limits.ts): at most one
 * code per number every SMS_MAX_FREQUENCY seconds (429
 * over_sms_send_rate_limit) and RATE_LIMIT_SMS_SENT over all numbers, counted
 * in the database. It has SMS_OTP_LENGTH digits, is valid SMS_OTP_EXP
 * seconds, is stored only as a keyed hash (auth/otp.ts), is single use, and
 * dies after SMS_OTP_MAX_ATTEMPTS guesses (each takes its attempt in the
 * database before it is compared, so concurrent guesses cannot exceed it).
 * Its token is issued only once the limits granted the SMS, so concurrent
 * requests for one number send one code, and that code is the one stored.
 *
 * A failed send leaves everything as it was: the user's previous code of
 * that kind still works, the send does not count against the limits, and the
 * user row is not touched; the caller gets the gateway's error (400/502/504
 * sms_send_failed).
 *
 *   const user2 = await s.sms.sendUserCode(user, "sms");              // sign-up / sign-in code
 *   const user3 = await s.sms.sendUserCode(user, "phone_change", "4915112345678");
 *   const row = await s.sms.verify(["sms"], "15551234567", "123456"); // consumes, or 403 otp_expired
 *   // MFA phone factors keep their own challenge rows and only need a code delivered:
 *   const { code } = await s.sms.sendCode({ phone: "15551234567", kind: "mfa_challenge" });
 */
import { AuthError, invalid } from "./errors.ts";
import type { Config } from "../config/mod.ts";
import type { Db } from "../db/db.ts";
import type { Logger } from "../observe/log.ts";
import { renderSmsTemplate, type SmsProvider } from "../sms/mod.ts";
import type { Clock } from "./clock.ts";
import { randomDigits } from "../util/crypto.ts";
import { AnswerTiming } from "../mail/timing.ts";
import type { Events } from "./events.ts";
import type { OneTimeTokenRow, OneTimeTokens } from "./otp.ts";
import type { SendLimits } from "./send_limits.ts";
import { normalizePhone, type UserRow, type Users } from "./users.ts";
import { refuseBanned } from "./ban.ts";

/** The one-time token types the phone flows use. */
export type PhoneCodeType = "sms" | "phone_change" | "reauthentication";

/** The send-limit kind of every code to a number: SMS_MAX_FREQUENCY holds across code types. */
export const SMS_CODE_KIND = "sms_code";

/**
 * A phone number in storage form (E.164 digits without "+"); a 422
 * validation_failed naming `field` when it is not an E.164 number.
 */
export function parsePhone(raw: unknown, field = "phone"): string {
  if (raw === undefined || raw === null || raw === "") {
    throw invalid(`${field} is required`);
  }
  if (typeof raw !== "string") throw invalid(`${field} must be a string`);
  const digits = normalizePhone(raw);
  if (!digits) {
    throw invalid(
      field === "phone"
        ? "Invalid phone number format (E.164 required)"
        : `Invalid phone number format (E.164 required) in ${field}`,
    );
  }
  return digits;
}

/** What a delivered code yields. */
export interface SentSms {
  provider: string;
  messageId: string;
}

interface TokenSnapshot {
  rows: OneTimeTokenRow[];
}

/** The SMS service (`s.sms`). */
export class SmsService {
  /** How long codes take to send, imitated by answers that send none (mail/timing.ts). */
  readonly timing = new AnswerTiming();
  /** The send_sms auth hook, when enabled: it sends instead of the gateway. */
  sendHook?: (phone: string, code: string, kind: string) => Promise<void>;

  constructor(
    readonly config: Config,
    readonly db: Db,
    readonly clock: Clock,
    readonly log: Logger,
    readonly events: Events,
    readonly users: Users,
    readonly otp: OneTimeTokens,
    readonly sendLimits: SendLimits,
    /** The configured gateway; null when SMS_PROVIDER is unset. */
    readonly provider: SmsProvider | null,
  ) {}

  #gateway(): SmsProvider {
    if (!this.provider) {
      throw new AuthError(
        "sms_send_failed",
        "Error sending SMS: no SMS provider is configured (AUTHSVC_SMS_PROVIDER)",
      );
    }
    return this.provider;
  }

  /**
   * Delivers one SMS to `phone` through the send limits. `prepare` makes the
   * text (issuing a token when the code must be recorded) and runs only once
   * the limits granted the slot, so a refused request issues and replaces
   * nothing, also when concurrent requests race for the same slot; when the
   * gateway fails, `undo` puts back what `prepare` changed. Emits `sms_sent`.
   */
  async #deliver(
    phone: string,
    kind: string,
    intervalSec: number,
    what: string,
    prepare: () => Promise<{ text: string; code: string; undo?: () => Promise<void> }>,
  ): Promise<SentSms> {
    if (this.sendHook) {
      // The send_sms auth hook sends instead of the gateway (auth/hooks_install.ts).
      const hook = this.sendHook;
      return await this.sendLimits.send(
        { channel: "sms", recipient: phone, kind, intervalSec },
        async () => {
          const { code, undo } = await prepare();
          try {
            await hook(phone, code, what);
          } catch (e) {
            await undo?.().catch(() => {});
            throw e;
          }
          this.events.emit("sms_sent", { provider: "hook" });
          return { provider: "hook", messageId: "" };
        },
      );
    }
    const gw = this.#gateway();
    return await this.sendLimits.send(
      { channel: "sms", recipient: phone, kind, intervalSec },
      async () => {
        const { text, undo } = await prepare();
        try {
          const r = await gw.send({ to: phone, text });
          this.events.emit("sms_sent", { provider: gw.name });
          this.log.info("sms sent", { provider: gw.name, kind: what, message_id: r.messageId });
          return { provider: gw.name, messageId: r.messageId };
        } catch (e) {
          this.log.warn("sms not sent", {
            provider: gw.name,
            kind: what,
            error_code: (e as AuthError)?.errorCode,
            situation: (e as AuthError)?.situation,
            error: e instanceof Error ? e.message : String(e),
          });
          await undo?.().catch((err) =>
            this.log.error("could not restore the previous code", { error: String(err) })
          );
          throw e;
        }
      },
    );
  }

  /**
   * Sends a fresh code to `phone` and returns it, for callers that keep their
   * own record of it (MFA phone challenges store its hash). Limits as for
   * every code: one per number every `intervalSec` (default SMS_MAX_FREQUENCY).
   */
  async sendCode(o: {
    phone: string;
    kind?: string;
    intervalSec?: number;
    codeLength?: number;
  }): Promise<SentSms & { code: string }> {
    const code = randomDigits(o.codeLength ?? this.config.sms.otpLength);
    const sent = await this.#deliver(
      o.phone,
      o.kind ?? SMS_CODE_KIND,
      o.intervalSec ?? this.config.sms.maxFrequency,
      o.kind ?? "code",
      () => Promise.resolve({ text: renderSmsTemplate(this.config.sms.template, code), code }),
    );
    return { ...sent, code };
  }

  /**
   * Issues a one-time token of `type` for `userId` to `phone` and sends its
   * code. The token is issued only once the send limits granted the SMS;
   * when the send fails, the user's previous token of that type is restored
   * (it keeps working) and the error passes through.
   */
  async sendOtp(o: {
    userId: string;
    phone: string;
    type: PhoneCodeType;
    data?: Record<string, unknown>;
    /** Beside the user's pending codes of the type (auth/otp.ts `alongside`). */
    alongside?: boolean;
  }): Promise<SentSms & { expiresAt: Date }> {
    const cfg = this.config.sms;
    let expiresAt = new Date(0);
    const started = this.timing.now();
    const sent = await this.#deliver(o.phone, SMS_CODE_KIND, cfg.maxFrequency, o.type, async () => {
      const before = await this.#snapshot(o.userId, o.type);
      const t = await this.otp.issue({
        userId: o.userId,
        type: o.type,
        recipient: o.phone,
        ttlSec: cfg.otpExp,
        codeLength: cfg.otpLength,
        link: false,
        data: o.data,
        alongside: o.alongside,
      });
      expiresAt = t.expiresAt;
      return {
        text: renderSmsTemplate(cfg.template, t.code),
        code: t.code,
        undo: () => this.#restore(t.id, before),
      };
    });
    this.timing.observe(o.type, this.timing.now() - started);
    return { ...sent, expiresAt };
  }

  async #snapshot(userId: string, type: string): Promise<TokenSnapshot> {
    return { rows: await this.otp.snapshot(userId, type) };
  }

  async #restore(newId: string, before: TokenSnapshot) {
    await this.otp.restore(newId, before.rows);
  }

  /**
   * Sends the user a code of `type` and records it on the user row, as
   * GoTrue does: `sms` to the user's phone (confirmation_sent_at),
   * `phone_change` to `phone` (phone_change, phone_change_sent_at),
   * `reauthentication` to the user's phone (reauthentication_sent_at).
   * Returns the updated row.
   */
  async sendUserCode(
    user: UserRow,
    type: PhoneCodeType,
    phone?: string,
    data?: Record<string, unknown>,
    alongside?: boolean,
  ): Promise<UserRow> {
    const to = type === "phone_change" ? phone : (phone ?? user.phone);
    if (!to) throw invalid("The user has no phone number");
    await this.sendOtp({ userId: user.id, phone: to, type, data, alongside });
    const now = this.clock.now();
    const fields = type === "sms"
      ? { confirmation_sent_at: now }
      : type === "phone_change"
      ? { phone_change: to, phone_change_sent_at: now }
      : { reauthentication_sent_at: now };
    return await this.users.update(user.id, fields) ?? user;
  }

  /**
   * Consumes the code of one of `types` sent to `phone` (SMS_OTP_MAX_ATTEMPTS
   * wrong guesses kill it); 403 otp_expired when wrong, used or expired. The
   * code of a banned user is refused (403 user_banned) before it is used up,
   * so the caller writes nothing for them (GoTrue's verify.go checks the ban
   * before the code too).
   */
  async verify(
    types: readonly PhoneCodeType[],
    phone: string,
    code: string,
  ): Promise<OneTimeTokenRow> {
    return await this.otp.verifyCode(types, phone, code, {
      maxAttempts: this.config.sms.maxAttempts,
      beforeConsume: async (row) => {
        const owner = await this.users.findById(row.user_id);
        if (owner) refuseBanned(owner, this.clock.now());
      },
    });
  }
}

/**
 * What every SMS provider shares: the message it is asked to send, the
 * answer, the one HTTP call with a timeout, and how a gateway's refusal
 * becomes an `AuthError` (error_code `sms_send_failed`) the caller sees.
 *
 * Situations of a failed send (api/errors.ts answers them 400, 502, 504):
 * - recipient_refused: the provider refused the recipient (invalid,
 *   unreachable or barred number);
 * - upstream_failed: the provider refused our request otherwise (credentials,
 *   sender, its own failure) or could not be reached;
 * - upstream_timeout: the provider did not answer within `SMS_TIMEOUT`.
 * The provider's own message is always in `msg`; no secret ever is.
 */
import { AuthError, type Situation } from "../auth/errors.ts";
import type { SmsProviderName } from "../config/mod.ts";

/** One SMS to send. */
export interface SmsMessage {
  /** Recipient, E.164 digits without the leading "+" (the storage form). */
  to: string;
  /** The text. */
  text: string;
}

/** What a provider answers for an accepted message. */
export interface SmsReceipt {
  /** The provider's id of the message ("" when it gives none). */
  messageId: string;
}

/** A gateway that sends SMS. */
export interface SmsProvider {
  readonly name: SmsProviderName;
  /** Sends one message; throws `AuthError` (sms_send_failed) when the gateway refuses or fails. */
  send(msg: SmsMessage): Promise<SmsReceipt>;
}

/** A failed send: an AuthError carrying the provider's name. */
export class SmsSendError extends AuthError {
  constructor(
    situation: Extract<Situation, "recipient_refused" | "upstream_failed" | "upstream_timeout">,
    readonly provider: SmsProviderName,
    message: string,
    options: ErrorOptions = {},
  ) {
    super("sms_send_failed", message, { ...options, situation });
    this.name = "SmsSendError";
  }
}

/** The provider refused the recipient, in its words. */
export function recipientRefused(provider: SmsProviderName, detail: string): SmsSendError {
  return new SmsSendError(
    "recipient_refused",
    provider,
    `Error sending SMS via ${provider}: ${detail}`,
  );
}

/** The provider refused or failed for another reason, in its words. */
export function gatewayFailed(
  provider: SmsProviderName,
  detail: string,
  options: ErrorOptions = {},
): SmsSendError {
  return new SmsSendError(
    "upstream_failed",
    provider,
    `Error sending SMS via ${provider}: ${detail}`,
    options,
  );
}

/** Renders `SMS_TEMPLATE`: every `{{ .Code }}` (spaces optional) becomes the code. */
export function renderSmsTemplate(template: string, code: string): string {
  return template.replace(/\{\{\s*\.Code\s*\}\}/g, () => code);
}

/** Joins a configured base URL and a path without doubling or losing a slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/** An HTTP answer already read: status and the body as text. */
export interface GatewayAnswer {
  status: number;
  text: string;
}

/**
 * Makes the one HTTP call to a gateway with a timeout, and reads the body.
 * Network failures become upstream_failed, the timeout upstream_timeout; the caller interprets the
 * answer in the provider's terms.
 */
export async function callGateway(
  provider: SmsProviderName,
  req: Request,
  timeoutSec: number,
): Promise<GatewayAnswer> {
  const signal = AbortSignal.timeout(Math.max(1, Math.round(timeoutSec * 1000)));
  try {
    const res = await fetch(req, { signal });
    return { status: res.status, text: await res.text() };
  } catch (e) {
    if ((e as Error)?.name === "TimeoutError" || signal.aborted) {
      throw new SmsSendError(
        "upstream_timeout",
        provider,
        `Error sending SMS via ${provider}: the gateway did not answer within ${timeoutSec} s`,
        { cause: e },
      );
    }
    throw gatewayFailed(provider, `the gateway could not be reached (${(e as Error)?.name})`, {
      cause: e,
    });
  }
}

/** Parses a gateway's JSON body; an unreadable one is a 502 naming the HTTP status. */
export function parseJsonAnswer(
  provider: SmsProviderName,
  ans: GatewayAnswer,
): Record<string, unknown> {
  try {
    const v = JSON.parse(ans.text);
    if (v && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch { /* fall through */ }
  throw gatewayFailed(provider, `unexpected answer (HTTP ${ans.status}, not a JSON object)`);
}

/** A string member of a parsed answer, or "" (numbers are turned into strings). */
export function str(o: unknown, key: string): string {
  if (!o || typeof o !== "object") return "";
  const v = (o as Record<string, unknown>)[key];
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : "";
}

/** `user:password` as an HTTP Basic authorization header value. */
export function basicAuth(user: string, password: string): string {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return `Basic ${btoa(s)}`;
}

/**
 * Vonage (Nexmo) SMS API: `POST {apiUrl}/sms/json` with a form-encoded body
 * (`api_key`, `api_secret`, `from`, `to`, `text`, and `type=unicode` when the
 * text is not ASCII); the key and secret in the body authenticate. The answer
 * is HTTP 200 JSON `{"message-count", "messages": [{status, "message-id",
 * "error-text"}]}`: status "0" is success, anything else names the failure.
 */
import type { Config } from "../config/mod.ts";
import {
  callGateway,
  gatewayFailed,
  joinUrl,
  parseJsonAnswer,
  recipientRefused,
  type SmsMessage,
  type SmsProvider,
  type SmsReceipt,
  str,
} from "./provider.ts";

/** Vonage statuses that mean the recipient was refused. */
const RECIPIENT_STATUSES = new Set([
  "6", // invalid message: unroutable destination
  "7", // number barred
  "29", // non-whitelisted destination
  "33", // number de-activated
]);

/** The Vonage gateway. */
export class VonageProvider implements SmsProvider {
  readonly name = "vonage" as const;

  constructor(
    readonly cfg: Config["sms"]["vonage"],
    readonly timeoutSec: number,
  ) {}

  /** The request Vonage documents for one message. */
  buildRequest(msg: SmsMessage): Request {
    const form = new URLSearchParams({
      api_key: this.cfg.apiKey,
      api_secret: this.cfg.apiSecret,
      from: this.cfg.from,
      to: msg.to,
      text: msg.text,
    });
    // deno-lint-ignore no-control-regex
    if (/[^\x00-\x7f]/.test(msg.text)) form.set("type", "unicode");
    return new Request(joinUrl(this.cfg.apiUrl, "/sms/json"), {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "accept": "application/json",
      },
      body: form.toString(),
    });
  }

  async send(msg: SmsMessage): Promise<SmsReceipt> {
    const ans = await callGateway(this.name, this.buildRequest(msg), this.timeoutSec);
    const body = parseJsonAnswer(this.name, ans);
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const first = messages[0];
    if (ans.status !== 200 || !first) {
      throw gatewayFailed(
        this.name,
        str(first, "error-text") || str(body, "title") || `HTTP ${ans.status}, no message status`,
      );
    }
    const status = str(first, "status");
    if (status !== "0") {
      const detail = `${str(first, "error-text") || "message refused"} (status ${status})`;
      if (RECIPIENT_STATUSES.has(status)) throw recipientRefused(this.name, detail);
      throw gatewayFailed(this.name, detail);
    }
    return { messageId: str(first, "message-id") };
  }
}

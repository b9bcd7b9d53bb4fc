/**
 * MessageBird (Bird) SMS API: `POST {apiUrl}/messages` with
 * `Authorization: AccessKey {key}` and a form-encoded body (`originator`,
 * `recipients`, `body`, `type=sms`, `datacoding=unicode`). Success: 201 with
 * `id` and `recipients.totalSentCount`; an error: 4xx with
 * `{"errors": [{code, description, parameter}]}`.
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

/** The MessageBird gateway. */
export class MessagebirdProvider implements SmsProvider {
  readonly name = "messagebird" as const;

  constructor(
    readonly cfg: Config["sms"]["messagebird"],
    readonly timeoutSec: number,
  ) {}

  /** The request MessageBird documents for one message. */
  buildRequest(msg: SmsMessage): Request {
    const form = new URLSearchParams({
      originator: this.cfg.originator,
      recipients: msg.to,
      body: msg.text,
      type: "sms",
      datacoding: "unicode",
    });
    return new Request(joinUrl(this.cfg.apiUrl, "/messages"), {
      method: "POST",
      headers: {
        "authorization": `AccessKey ${this.cfg.accessKey}`,
        "content-type": "application/x-www-form-urlencoded",
        "accept": "application/json",
      },
      body: form.toString(),
    });
  }

  async send(msg: SmsMessage): Promise<SmsReceipt> {
    const ans = await callGateway(this.name, this.buildRequest(msg), this.timeoutSec);
    const body = parseJsonAnswer(this.name, ans);
    if (ans.status < 200 || ans.status > 299) {
      const errors = Array.isArray(body.errors) ? body.errors : [];
      const first = errors[0] ?? {};
      const code = str(first, "code");
      const detail = `${str(first, "description") || `HTTP ${ans.status}`}${
        code ? ` (code ${code})` : ""
      }`;
      // code 9: "no (correct) recipients found"; parameter "recipients": a bad number
      if (code === "9" || str(first, "parameter") === "recipients") {
        throw recipientRefused(this.name, detail);
      }
      throw gatewayFailed(this.name, detail);
    }
    const recipients = body.recipients as Record<string, unknown> | undefined;
    if (!recipients || Number(recipients.totalSentCount) === 0) {
      throw gatewayFailed(this.name, "the message was sent to no recipient (totalSentCount 0)");
    }
    return { messageId: str(body, "id") };
  }
}

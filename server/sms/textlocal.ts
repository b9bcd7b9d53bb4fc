/**
 * Textlocal: `POST {apiUrl}/send/` with a form-encoded body (`apikey`,
 * `numbers`, `message`, `sender` when set). The API key authenticates (in the
 * body, as Textlocal documents). Every answer is HTTP 200 JSON with `status`
 * "success" or "failure"; failures list `errors: [{code, message}]`.
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

/** Textlocal error codes that mean the recipient was refused. */
const RECIPIENT_CODES = new Set(["4", "32", "51"]);

/** The Textlocal gateway. */
export class TextlocalProvider implements SmsProvider {
  readonly name = "textlocal" as const;

  constructor(
    readonly cfg: Config["sms"]["textlocal"],
    readonly timeoutSec: number,
  ) {}

  /** The request Textlocal documents for one message. */
  buildRequest(msg: SmsMessage): Request {
    const form = new URLSearchParams({
      apikey: this.cfg.apiKey,
      numbers: msg.to,
      message: msg.text,
    });
    if (this.cfg.sender) form.set("sender", this.cfg.sender);
    return new Request(joinUrl(this.cfg.apiUrl, "/send/"), {
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
    if (ans.status !== 200 || str(body, "status") !== "success") {
      const errors = Array.isArray(body.errors) ? body.errors : [];
      const first = errors[0] ?? {};
      const code = str(first, "code");
      const detail = `${
        str(first, "message") || `HTTP ${ans.status}, status "${str(body, "status")}"`
      }${code ? ` (code ${code})` : ""}`;
      if (RECIPIENT_CODES.has(code)) throw recipientRefused(this.name, detail);
      throw gatewayFailed(this.name, detail);
    }
    const messages = Array.isArray(body.messages) ? body.messages : [];
    return { messageId: str(messages[0], "id") || str(body, "batch_id") };
  }
}

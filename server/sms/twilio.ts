/**
 * Twilio Programmable Messaging: `POST {apiUrl}/2010-04-01/Accounts/{AccountSid}/Messages.json`,
 * HTTP Basic authentication with the account SID and auth token, a
 * form-encoded body with `To` ("+" E.164), `Body`, and either `From` (when
 * `SMS_TWILIO_MESSAGE_SERVICE_SID` is a sender number, "+…") or
 * `MessagingServiceSid` (an "MG…" SID). Success: 201 with `sid` and `status`;
 * an error: 4xx/5xx with `{code, message, more_info, status}`.
 */
import type { Config } from "../config/mod.ts";
import {
  basicAuth,
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

/** Twilio error codes that mean the recipient cannot receive this SMS. */
const RECIPIENT_CODES = new Set([
  21211, // invalid 'To' phone number
  21214, // 'To' phone number cannot be reached
  21217, // phone number does not appear to be valid
  21408, // permission to send to this region is not enabled
  21610, // the recipient unsubscribed
  21612, // the 'To' number is not currently reachable
  21614, // 'To' number is not a valid mobile number
]);

/** The Twilio gateway. */
export class TwilioProvider implements SmsProvider {
  readonly name = "twilio" as const;

  constructor(
    readonly cfg: Config["sms"]["twilio"],
    readonly timeoutSec: number,
  ) {}

  /** The request Twilio documents for one message. */
  buildRequest(msg: SmsMessage): Request {
    const form = new URLSearchParams({ To: `+${msg.to}`, Body: msg.text });
    const sender = this.cfg.messageServiceSid.trim();
    if (/^\+?[0-9]{2,15}$/.test(sender)) {
      form.set("From", sender.startsWith("+") ? sender : `+${sender}`);
    } else {
      form.set("MessagingServiceSid", sender);
    }
    const url = joinUrl(
      this.cfg.apiUrl,
      `/2010-04-01/Accounts/${encodeURIComponent(this.cfg.accountSid)}/Messages.json`,
    );
    return new Request(url, {
      method: "POST",
      headers: {
        "authorization": basicAuth(this.cfg.accountSid, this.cfg.authToken),
        "content-type": "application/x-www-form-urlencoded",
        "accept": "application/json",
      },
      body: form.toString(),
    });
  }

  async send(msg: SmsMessage): Promise<SmsReceipt> {
    const ans = await callGateway(this.name, this.buildRequest(msg), this.timeoutSec);
    const body = parseJsonAnswer(this.name, ans);
    if (ans.status !== 200 && ans.status !== 201) {
      const code = Number(body.code);
      const detail = `${str(body, "message") || `HTTP ${ans.status}`}${
        Number.isFinite(code) && code ? ` (code ${code})` : ""
      }`;
      if (RECIPIENT_CODES.has(code)) throw recipientRefused(this.name, detail);
      throw gatewayFailed(this.name, detail);
    }
    const status = str(body, "status");
    if (status === "failed" || status === "undelivered") {
      const detail = `${str(body, "error_message") || `message ${status}`}${
        str(body, "error_code") ? ` (code ${str(body, "error_code")})` : ""
      }`;
      throw gatewayFailed(this.name, detail);
    }
    return { messageId: str(body, "sid") };
  }
}

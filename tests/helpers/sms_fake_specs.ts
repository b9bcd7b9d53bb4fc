/**
 * The four SMS gateways' documented HTTP APIs, as the fakes of sms_fakes.ts
 * check and answer them: for each provider, the request it accepts (method,
 * path, authentication, form fields) and its success and error bodies.
 * @module
 */
import type { SmsProviderName } from "../../server/config/mod.ts";
import type { FakeFailure, FakeSms } from "./sms_fakes.ts";

/** The credentials each fake expects (and the server is configured with). */
export const CREDS = {
  twilio: { sid: "AC0123456789abcdef0123456789abcdef", token: "twilio-auth-token-secret" },
  messagebird: { key: "live_messagebird_access_key", originator: "AuthSvc" },
  textlocal: { key: "textlocal-api-key-secret", sender: "AUTHSV" },
  vonage: { key: "vonagekey", secret: "vonage-secret-1", from: "AuthSvc" },
};

/** A number as E.164 digits without "+". */
export const digitsOnly = (p: string) => p.replace(/[^0-9]/g, "");

/** A fake's answer: HTTP status and JSON body. */
export type Answer = { status: number; body: unknown };

/** What a provider's handler may use of its fake. */
export interface FakeCtx {
  provider: SmsProviderName;
  messages: FakeSms[];
  violations: string[];
  twilioSender: string;
  /** The fake's base URL. */
  url(): string;
  takeFailure(): FakeFailure | null;
  /** The next message number, and the current one. */
  nextSeq(): number;
  seq(): number;
}

/** The form body of a request, or what is wrong with it. */
function formOf(req: Request, text: string, url: URL): URLSearchParams | string {
  const type = req.headers.get("content-type") ?? "";
  if (!type.toLowerCase().startsWith("application/x-www-form-urlencoded")) {
    return `content-type is "${type}", expected application/x-www-form-urlencoded`;
  }
  // Credentials and fields go in the body: a query string ends up in proxies' and servers' logs.
  if (url.search) return `the URL has a query string (${[...url.searchParams.keys()].join(", ")})`;
  return new URLSearchParams(text);
}

/** Each provider's handler: checks one request and answers it as the provider would. */
export const HANDLERS: Record<
  SmsProviderName,
  (x: FakeCtx, req: Request, url: URL, text: string) => Answer
> = {
  twilio(x, req, url, text) {
    const c = CREDS.twilio;
    const err = (status: number, code: number, message: string): Answer => ({
      status,
      body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status },
    });
    if (req.method !== "POST" || url.pathname !== `/2010-04-01/Accounts/${c.sid}/Messages.json`) {
      x.violations.push(`${req.method} ${url.pathname}`);
      return err(404, 20404, "The requested resource was not found");
    }
    if (req.headers.get("authorization") !== `Basic ${btoa(`${c.sid}:${c.token}`)}`) {
      x.violations.push("authorization is not HTTP Basic with the account SID and auth token");
      return err(401, 20003, "Authenticate");
    }
    const form = formOf(req, text, url);
    if (typeof form === "string") {
      x.violations.push(form);
      return err(400, 21620, "Invalid request body");
    }
    const to = form.get("To") ?? "";
    if (!/^\+[1-9][0-9]{1,14}$/.test(to)) {
      x.violations.push(`To is "${to}", expected "+" and E.164 digits`);
      return err(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    }
    if (!form.get("Body")) {
      x.violations.push("Body is missing");
      return err(400, 21602, "Message body is required.");
    }
    const from = form.get("From");
    const mss = form.get("MessagingServiceSid");
    if (
      x.twilioSender.startsWith("+")
        ? from !== x.twilioSender || mss
        : mss !== x.twilioSender || from
    ) {
      x.violations.push(
        `sender: From=${from} MessagingServiceSid=${mss}, expected ${x.twilioSender} in ${
          x.twilioSender.startsWith("+") ? "From" : "MessagingServiceSid"
        }`,
      );
      return err(400, 21603, "A 'From' phone number is required.");
    }
    const f = x.takeFailure();
    if (f === "recipient") {
      return err(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    }
    if (f === "auth") return err(401, 20003, "Authenticate");
    if (f === "server") return err(500, 20500, "Internal Server Error");
    x.messages.push({
      provider: x.provider,
      to: digitsOnly(to),
      from: from ?? mss ?? "",
      text: form.get("Body")!,
    });
    const sid = `SM${String(x.nextSeq()).padStart(32, "0")}`;
    return {
      status: 201,
      body: {
        sid,
        account_sid: c.sid,
        to,
        from: from ?? null,
        messaging_service_sid: mss ?? null,
        body: form.get("Body"),
        status: mss ? "accepted" : "queued",
        num_segments: "1",
        direction: "outbound-api",
        api_version: "2010-04-01",
        error_code: null,
        error_message: null,
        uri: `/2010-04-01/Accounts/${c.sid}/Messages/${sid}.json`,
      },
    };
  },

  messagebird(x, req, url, text) {
    const c = CREDS.messagebird;
    const err = (
      status: number,
      code: number,
      description: string,
      parameter: string | null,
    ) => ({
      status,
      body: { errors: [{ code, description, parameter }] },
    });
    if (req.method !== "POST" || url.pathname !== "/messages") {
      x.violations.push(`${req.method} ${url.pathname}`);
      return err(404, 20, "message not found", null);
    }
    if (req.headers.get("authorization") !== `AccessKey ${c.key}`) {
      x.violations.push("authorization is not AccessKey with the access key");
      return err(401, 2, "Request not allowed (incorrect access_key)", "access_key");
    }
    const form = formOf(req, text, url);
    if (typeof form === "string") {
      x.violations.push(form);
      return err(422, 9, "no (correct) recipients found", "recipients");
    }
    const recipients = form.get("recipients") ?? "";
    if (!/^[1-9][0-9]{1,14}$/.test(recipients)) {
      x.violations.push(`recipients is "${recipients}", expected E.164 digits`);
      return err(422, 9, "no (correct) recipients found", "recipients");
    }
    if (form.get("originator") !== c.originator) {
      x.violations.push(`originator is "${form.get("originator")}"`);
      return err(422, 9, "originator is required", "originator");
    }
    if (!form.get("body")) {
      x.violations.push("body is missing");
      return err(422, 9, "body is required", "body");
    }
    const f = x.takeFailure();
    if (f === "recipient") return err(422, 9, "no (correct) recipients found", "recipients");
    if (f === "auth") {
      return err(401, 2, "Request not allowed (incorrect access_key)", "access_key");
    }
    if (f === "server") return err(500, 99, "internal error", null);
    x.messages.push({
      provider: x.provider,
      to: recipients,
      from: c.originator,
      text: form.get("body")!,
    });
    const id = `mb${String(x.nextSeq()).padStart(30, "0")}`;
    return {
      status: 201,
      body: {
        id,
        href: `${x.url()}/messages/${id}`,
        direction: "mt",
        type: form.get("type") ?? "sms",
        originator: c.originator,
        body: form.get("body"),
        datacoding: form.get("datacoding") ?? "plain",
        recipients: {
          totalCount: 1,
          totalSentCount: 1,
          totalDeliveredCount: 0,
          totalDeliveryFailedCount: 0,
          items: [{ recipient: Number(recipients), status: "sent" }],
        },
      },
    };
  },

  textlocal(x, req, url, text) {
    const c = CREDS.textlocal;
    const err = (code: number, message: string): Answer => ({
      status: 200,
      body: { errors: [{ code, message }], status: "failure" },
    });
    if (req.method !== "POST" || url.pathname !== "/send/") {
      x.violations.push(`${req.method} ${url.pathname}`);
      return err(2, "Unrecognised command");
    }
    const form = formOf(req, text, url);
    if (typeof form === "string") {
      x.violations.push(form);
      return err(3, "Invalid login details");
    }
    if (form.get("apikey") !== c.key) {
      x.violations.push("apikey is not the API key");
      return err(3, "Invalid login details");
    }
    const numbers = form.get("numbers") ?? "";
    if (!/^[1-9][0-9]{1,14}$/.test(numbers)) {
      x.violations.push(`numbers is "${numbers}", expected E.164 digits`);
      return err(32, "Invalid number format");
    }
    if (!form.get("message")) {
      x.violations.push("message is missing");
      return err(5, "No message content");
    }
    if (form.get("sender") !== c.sender) {
      x.violations.push(`sender is "${form.get("sender")}"`);
      return err(43, "Invalid sender name");
    }
    const f = x.takeFailure();
    if (f === "recipient") return err(51, "No valid numbers specified");
    if (f === "auth") return err(3, "Invalid login details");
    if (f === "server") return { status: 500, body: { status: "failure", errors: [] } };
    x.messages.push({
      provider: x.provider,
      to: numbers,
      from: c.sender,
      text: form.get("message")!,
    });
    const id = String(1000 + x.nextSeq());
    return {
      status: 200,
      body: {
        balance: 1000 - x.seq(),
        batch_id: 500 + x.seq(),
        cost: 1,
        num_messages: 1,
        message: { num_parts: 1, sender: c.sender, content: form.get("message") },
        receipt_url: "",
        custom: "",
        messages: [{ id, recipient: Number(numbers) }],
        status: "success",
      },
    };
  },

  vonage(x, req, url, text) {
    const c = CREDS.vonage;
    const err = (status: string, errorText: string): Answer => ({
      status: 200,
      body: { "message-count": "1", messages: [{ status, "error-text": errorText }] },
    });
    if (req.method !== "POST" || url.pathname !== "/sms/json") {
      x.violations.push(`${req.method} ${url.pathname}`);
      return { status: 404, body: { type: "about:blank", title: "Not Found" } };
    }
    const form = formOf(req, text, url);
    if (typeof form === "string") {
      x.violations.push(form);
      return err("2", "Missing api_key");
    }
    if (form.get("api_key") !== c.key || form.get("api_secret") !== c.secret) {
      x.violations.push("api_key / api_secret are not the credentials");
      return err("4", "Bad Credentials");
    }
    const to = form.get("to") ?? "";
    const body = form.get("text") ?? "";
    if (!/^[1-9][0-9]{1,14}$/.test(to)) {
      x.violations.push(`to is "${to}", expected E.164 digits without "+"`);
      return err("3", "Invalid to address");
    }
    if (!body) {
      x.violations.push("text is missing");
      return err("2", "Missing text");
    }
    if (form.get("from") !== c.from) {
      x.violations.push(`from is "${form.get("from")}"`);
      return err("15", "Illegal Sender Address - rejected");
    }
    // deno-lint-ignore no-control-regex
    if (/[^\x00-\x7f]/.test(body) && form.get("type") !== "unicode") {
      x.violations.push("non-ASCII text without type=unicode");
      return err("3", "Invalid text: unicode text needs type=unicode");
    }
    const f = x.takeFailure();
    if (f === "recipient") return err("29", "Non-Whitelisted Destination");
    if (f === "auth") return err("4", "Bad Credentials");
    if (f === "server") return err("5", "Internal Error");
    x.messages.push({ provider: x.provider, to, from: c.from, text: body });
    return {
      status: 200,
      body: {
        "message-count": "1",
        messages: [{
          to,
          "message-id": `0A${String(x.nextSeq()).padStart(14, "0")}`,
          status: "0",
          "remaining-balance": "10.00",
          "message-price": "0.03",
          network: "12345",
        }],
      },
    };
  },
};

/**
 * Local fakes of the four SMS gateways (Twilio, MessageBird, Textlocal,
 * Vonage): a `Deno.serve` on 127.0.0.1 port 0 per fake that checks every
 * request exactly as the provider documents it (method, path, authentication,
 * content type, fields), answers like the provider (its success body, and its
 * error format when told to fail), and records each accepted message, so a
 * test reads the code the way a user reads their phone.
 *
 * API:
 *
 *   const sms = await startSmsFake("twilio");          // or messagebird | textlocal | vonage
 *   const srv = await startTestServer({ ...sms.env, AUTHSVC_EXTERNAL_PHONE_ENABLED: "true" });
 *   ... POST /otp {phone: "+15551234567"} ...
 *   const code = sms.lastCode("+15551234567");         // digits of the last SMS to that number
 *   sms.messages;                                      // every accepted SMS: {to, from, text, provider}
 *   sms.violations;                                    // requests that broke the documented format
 *   sms.failWith("recipient" | "auth" | "server", n?); // answer the next n (default all) in the provider's error format
 *   sms.hang(); / sms.resume();                        // accept connections but never answer (timeouts)
 *   await sms.stop();                                  // stop listening: the gateway is down
 *   await sms.close();                                 // at the end of the test (idempotent)
 *
 * `env` holds AUTHSVC_SMS_PROVIDER, the provider's credentials, its
 * AUTHSVC_SMS_<PROVIDER>_API_URL pointing at the fake, and AUTHSVC_SMS_TIMEOUT
 * (1 s, so timeout tests stay quick). For Twilio, `startSmsFake("twilio",
 * { twilioSender: "number" })` configures a sender number ("+…", sent as
 * `From`) instead of a messaging service SID ("MG…", sent as
 * `MessagingServiceSid`).
 */
import type { SmsProviderName } from "../../server/config.ts";

/** One message the fake accepted. */
export interface FakeSms {
  provider: SmsProviderName;
  /** Recipient as E.164 digits without "+". */
  to: string;
  /** Sender as sent (From, MessagingServiceSid, originator, sender or from). */
  from: string;
  text: string;
}

/** Failures a fake can be told to answer with, in its provider's error format. */
export type FakeFailure = "recipient" | "auth" | "server";

/** A running fake gateway. */
export interface SmsFake {
  provider: SmsProviderName;
  url: string;
  env: Record<string, string>;
  messages: FakeSms[];
  violations: string[];
  /** Requests received (accepted or not). */
  requests: number;
  messagesTo(phone: string): FakeSms[];
  /** The digits of the last SMS to `phone` (4 or more in a row), or undefined. */
  lastCode(phone: string): string | undefined;
  failWith(kind: FakeFailure | null, times?: number): void;
  hang(): void;
  resume(): void;
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** Options of startSmsFake. */
export interface SmsFakeOptions {
  /** Twilio only: "sid" (default) configures an MG… messaging service, "number" a sender number. */
  twilioSender?: "sid" | "number";
}

const CREDS = {
  twilio: { sid: "AC0123456789abcdef0123456789abcdef", token: "twilio-auth-token-secret" },
  messagebird: { key: "live_messagebird_access_key", originator: "AuthSvc" },
  textlocal: { key: "textlocal-api-key-secret", sender: "AUTHSV" },
  vonage: { key: "vonagekey", secret: "vonage-secret-1", from: "AuthSvc" },
};

const digitsOnly = (p: string) => p.replace(/[^0-9]/g, "");

type Answer = { status: number; body: unknown };
type Check = (req: Request, form: URLSearchParams, url: URL) => string | null;

/** Starts a fake of `provider`. */
export async function startSmsFake(
  provider: SmsProviderName,
  opts: SmsFakeOptions = {},
): Promise<SmsFake> {
  const messages: FakeSms[] = [];
  const violations: string[] = [];
  let failure: FakeFailure | null = null;
  let failuresLeft = 0;
  let hanging = false;
  const release: (() => void)[] = [];
  let seq = 0;
  const twilioSender = opts.twilioSender === "number"
    ? "+15005550006"
    : "MG0123456789abcdef0123456789abcdef";

  const fake: SmsFake = {
    provider,
    url: "",
    env: {},
    messages,
    violations,
    requests: 0,
    messagesTo: (phone) => messages.filter((m) => m.to === digitsOnly(phone)),
    lastCode(phone) {
      const list = fake.messagesTo(phone);
      return list.at(-1)?.text.match(/\d{4,}/)?.[0];
    },
    failWith(kind, times = Infinity) {
      failure = kind;
      failuresLeft = kind ? times : 0;
    },
    hang: () => void (hanging = true),
    resume() {
      hanging = false;
      for (const r of release.splice(0)) r();
    },
    stop: async () => {
      fake.resume();
      ac.abort();
      await server.finished;
    },
    close: async () => await fake.stop(),
  };

  function takeFailure(): FakeFailure | null {
    if (!failure || failuresLeft <= 0) return null;
    failuresLeft--;
    const f = failure;
    if (failuresLeft <= 0) failure = null;
    return f;
  }

  function formOf(req: Request, text: string, url: URL): URLSearchParams | string {
    const type = req.headers.get("content-type") ?? "";
    if (!type.toLowerCase().startsWith("application/x-www-form-urlencoded")) {
      return `content-type is "${type}", expected application/x-www-form-urlencoded`;
    }
    const form = new URLSearchParams(text);
    for (const [k, v] of url.searchParams) if (!form.has(k)) form.set(k, v);
    return form;
  }

  const handlers: Record<SmsProviderName, (req: Request, url: URL, text: string) => Answer> = {
    twilio(req, url, text) {
      const c = CREDS.twilio;
      const err = (status: number, code: number, message: string): Answer => ({
        status,
        body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status },
      });
      if (req.method !== "POST" || url.pathname !== `/2010-04-01/Accounts/${c.sid}/Messages.json`) {
        violations.push(`${req.method} ${url.pathname}`);
        return err(404, 20404, "The requested resource was not found");
      }
      if (req.headers.get("authorization") !== `Basic ${btoa(`${c.sid}:${c.token}`)}`) {
        violations.push("authorization is not HTTP Basic with the account SID and auth token");
        return err(401, 20003, "Authenticate");
      }
      const form = formOf(req, text, url);
      if (typeof form === "string") {
        violations.push(form);
        return err(400, 21620, "Invalid request body");
      }
      const to = form.get("To") ?? "";
      if (!/^\+[1-9][0-9]{1,14}$/.test(to)) {
        violations.push(`To is "${to}", expected "+" and E.164 digits`);
        return err(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
      }
      if (!form.get("Body")) {
        violations.push("Body is missing");
        return err(400, 21602, "Message body is required.");
      }
      const from = form.get("From");
      const mss = form.get("MessagingServiceSid");
      if (
        twilioSender.startsWith("+") ? from !== twilioSender || mss : mss !== twilioSender || from
      ) {
        violations.push(
          `sender: From=${from} MessagingServiceSid=${mss}, expected ${twilioSender} in ${
            twilioSender.startsWith("+") ? "From" : "MessagingServiceSid"
          }`,
        );
        return err(400, 21603, "A 'From' phone number is required.");
      }
      const f = takeFailure();
      if (f === "recipient") {
        return err(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
      }
      if (f === "auth") return err(401, 20003, "Authenticate");
      if (f === "server") return err(500, 20500, "Internal Server Error");
      messages.push({
        provider,
        to: digitsOnly(to),
        from: from ?? mss ?? "",
        text: form.get("Body")!,
      });
      const sid = `SM${String(++seq).padStart(32, "0")}`;
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

    messagebird(req, url, text) {
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
        violations.push(`${req.method} ${url.pathname}`);
        return err(404, 20, "message not found", null);
      }
      if (req.headers.get("authorization") !== `AccessKey ${c.key}`) {
        violations.push("authorization is not AccessKey with the access key");
        return err(401, 2, "Request not allowed (incorrect access_key)", "access_key");
      }
      const form = formOf(req, text, url);
      if (typeof form === "string") {
        violations.push(form);
        return err(422, 9, "no (correct) recipients found", "recipients");
      }
      const recipients = form.get("recipients") ?? "";
      if (!/^[1-9][0-9]{1,14}$/.test(recipients)) {
        violations.push(`recipients is "${recipients}", expected E.164 digits`);
        return err(422, 9, "no (correct) recipients found", "recipients");
      }
      if (form.get("originator") !== c.originator) {
        violations.push(`originator is "${form.get("originator")}"`);
        return err(422, 9, "originator is required", "originator");
      }
      if (!form.get("body")) {
        violations.push("body is missing");
        return err(422, 9, "body is required", "body");
      }
      const f = takeFailure();
      if (f === "recipient") return err(422, 9, "no (correct) recipients found", "recipients");
      if (f === "auth") {
        return err(401, 2, "Request not allowed (incorrect access_key)", "access_key");
      }
      if (f === "server") return err(500, 99, "internal error", null);
      messages.push({ provider, to: recipients, from: c.originator, text: form.get("body")! });
      const id = `mb${String(++seq).padStart(30, "0")}`;
      return {
        status: 201,
        body: {
          id,
          href: `${fake.url}/messages/${id}`,
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

    textlocal(req, url, text) {
      const c = CREDS.textlocal;
      const err = (code: number, message: string): Answer => ({
        status: 200,
        body: { errors: [{ code, message }], status: "failure" },
      });
      if (req.method !== "POST" || url.pathname !== "/send/") {
        violations.push(`${req.method} ${url.pathname}`);
        return err(2, "Unrecognised command");
      }
      const form = formOf(req, text, url);
      if (typeof form === "string") {
        violations.push(form);
        return err(3, "Invalid login details");
      }
      if (form.get("apikey") !== c.key) {
        violations.push("apikey is not the API key");
        return err(3, "Invalid login details");
      }
      const numbers = form.get("numbers") ?? "";
      if (!/^[1-9][0-9]{1,14}$/.test(numbers)) {
        violations.push(`numbers is "${numbers}", expected E.164 digits`);
        return err(32, "Invalid number format");
      }
      if (!form.get("message")) {
        violations.push("message is missing");
        return err(5, "No message content");
      }
      if (form.get("sender") !== c.sender) {
        violations.push(`sender is "${form.get("sender")}"`);
        return err(43, "Invalid sender name");
      }
      const f = takeFailure();
      if (f === "recipient") return err(51, "No valid numbers specified");
      if (f === "auth") return err(3, "Invalid login details");
      if (f === "server") return { status: 500, body: { status: "failure", errors: [] } };
      messages.push({ provider, to: numbers, from: c.sender, text: form.get("message")! });
      const id = String(1000 + ++seq);
      return {
        status: 200,
        body: {
          balance: 1000 - seq,
          batch_id: 500 + seq,
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

    vonage(req, url, text) {
      const c = CREDS.vonage;
      const err = (status: string, errorText: string): Answer => ({
        status: 200,
        body: { "message-count": "1", messages: [{ status, "error-text": errorText }] },
      });
      if (req.method !== "POST" || url.pathname !== "/sms/json") {
        violations.push(`${req.method} ${url.pathname}`);
        return { status: 404, body: { type: "about:blank", title: "Not Found" } };
      }
      const form = formOf(req, text, url);
      if (typeof form === "string") {
        violations.push(form);
        return err("2", "Missing api_key");
      }
      if (form.get("api_key") !== c.key || form.get("api_secret") !== c.secret) {
        violations.push("api_key / api_secret are not the credentials");
        return err("4", "Bad Credentials");
      }
      const to = form.get("to") ?? "";
      const body = form.get("text") ?? "";
      if (!/^[1-9][0-9]{1,14}$/.test(to)) {
        violations.push(`to is "${to}", expected E.164 digits without "+"`);
        return err("3", "Invalid to address");
      }
      if (!body) {
        violations.push("text is missing");
        return err("2", "Missing text");
      }
      if (form.get("from") !== c.from) {
        violations.push(`from is "${form.get("from")}"`);
        return err("15", "Illegal Sender Address - rejected");
      }
      // deno-lint-ignore no-control-regex
      if (/[^\x00-\x7f]/.test(body) && form.get("type") !== "unicode") {
        violations.push("non-ASCII text without type=unicode");
        return err("3", "Invalid text: unicode text needs type=unicode");
      }
      const f = takeFailure();
      if (f === "recipient") return err("29", "Non-Whitelisted Destination");
      if (f === "auth") return err("4", "Bad Credentials");
      if (f === "server") return err("5", "Internal Error");
      messages.push({ provider, to, from: c.from, text: body });
      return {
        status: 200,
        body: {
          "message-count": "1",
          messages: [{
            to,
            "message-id": `0A${String(++seq).padStart(14, "0")}`,
            status: "0",
            "remaining-balance": "10.00",
            "message-price": "0.03",
            network: "12345",
          }],
        },
      };
    },
  };

  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    async (req) => {
      fake.requests++;
      const text = await req.text();
      if (hanging) {
        await new Promise<void>((r) => release.push(r));
        return new Response("gateway gone", { status: 503 });
      }
      const a = handlers[provider](req, new URL(req.url), text);
      return new Response(JSON.stringify(a.body), {
        status: a.status,
        headers: { "content-type": "application/json" },
      });
    },
  );
  fake.url = `http://127.0.0.1:${server.addr.port}`;
  const base = { AUTHSVC_SMS_PROVIDER: provider, AUTHSVC_SMS_TIMEOUT: "1" };
  fake.env = {
    twilio: {
      ...base,
      AUTHSVC_SMS_TWILIO_ACCOUNT_SID: CREDS.twilio.sid,
      AUTHSVC_SMS_TWILIO_AUTH_TOKEN: CREDS.twilio.token,
      AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: twilioSender,
      AUTHSVC_SMS_TWILIO_API_URL: fake.url,
    },
    messagebird: {
      ...base,
      AUTHSVC_SMS_MESSAGEBIRD_ACCESS_KEY: CREDS.messagebird.key,
      AUTHSVC_SMS_MESSAGEBIRD_ORIGINATOR: CREDS.messagebird.originator,
      AUTHSVC_SMS_MESSAGEBIRD_API_URL: fake.url,
    },
    textlocal: {
      ...base,
      AUTHSVC_SMS_TEXTLOCAL_API_KEY: CREDS.textlocal.key,
      AUTHSVC_SMS_TEXTLOCAL_SENDER: CREDS.textlocal.sender,
      AUTHSVC_SMS_TEXTLOCAL_API_URL: fake.url,
    },
    vonage: {
      ...base,
      AUTHSVC_SMS_VONAGE_API_KEY: CREDS.vonage.key,
      AUTHSVC_SMS_VONAGE_API_SECRET: CREDS.vonage.secret,
      AUTHSVC_SMS_VONAGE_FROM: CREDS.vonage.from,
      AUTHSVC_SMS_VONAGE_API_URL: fake.url,
    },
  }[provider];
  let closed = false;
  const stop = fake.stop;
  fake.stop = async () => {
    if (closed) return;
    closed = true;
    await stop();
  };
  fake.close = fake.stop;
  return await Promise.resolve(fake);
}

/** The four providers, for tests that run once per provider. */
export const SMS_FAKE_PROVIDERS: SmsProviderName[] = [
  "twilio",
  "messagebird",
  "textlocal",
  "vonage",
];

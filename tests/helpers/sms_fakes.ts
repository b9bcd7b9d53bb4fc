/**
 * Local fakes of the four SMS gateways (Twilio, MessageBird, Textlocal,
 * Vonage): a `Deno.serve` on 127.0.0.1 port 0 per fake that checks every
 * request exactly as the provider documents it (method, path, authentication,
 * content type, fields), answers like the provider (its success body, and its
 * error format when told to fail), and records each accepted message, so a
 * test reads the code the way a user reads their phone. Each provider's
 * documented request and answers live in sms_fake_specs.ts; a query string
 * on the gateway URL is a violation (credentials belong in the body).
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
import type { SmsProviderName } from "../../server/config/mod.ts";
import { CREDS, digitsOnly, type FakeCtx, HANDLERS } from "./sms_fake_specs.ts";

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

  const ctx: FakeCtx = {
    provider,
    messages,
    violations,
    twilioSender,
    url: () => fake.url,
    takeFailure,
    nextSeq: () => ++seq,
    seq: () => seq,
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
      const a = HANDLERS[provider](ctx, req, new URL(req.url), text);
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

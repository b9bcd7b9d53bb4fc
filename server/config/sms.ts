/**
 * SMS: the gateway, its credentials and base URL, the code's length,
 * validity and attempts. A chosen gateway without its credentials stops the
 * start unless phone sign-ups are autoconfirmed.
 */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const SMS_SECTION: SectionDoc = {
  title: "SMS",
  about:
    "The SMS gateway and its credentials, and the codes it sends ([server/phone.md](server/phone.md)).",
};

export const SMS_PROVIDERS = ["twilio", "messagebird", "textlocal", "vonage"] as const;
export type SmsProviderName = typeof SMS_PROVIDERS[number];

/** The SMS settings. */
export interface SmsConfig {
  autoconfirm: boolean;
  maxFrequency: number;
  otpExp: number;
  otpLength: number;
  provider: SmsProviderName | "";
  template: string;
  maxAttempts: number;
  /** Seconds an SMS gateway call may take. */
  timeoutSec: number;
  twilio: { accountSid: string; authToken: string; messageServiceSid: string; apiUrl: string };
  messagebird: { accessKey: string; originator: string; apiUrl: string };
  textlocal: { apiKey: string; sender: string; apiUrl: string };
  vonage: { apiKey: string; apiSecret: string; from: string; apiUrl: string };
}

export function readSms(r: ConfigReader): SmsConfig {
  const sms: SmsConfig = {
    autoconfirm: r.bool("SMS_AUTOCONFIRM", { doc: "phone sign-ups need no SMS code" }),
    maxFrequency: r.seconds("SMS_MAX_FREQUENCY", {
      default: 60,
      doc: "seconds between codes to one number",
    }),
    otpExp: r.seconds("SMS_OTP_EXP", { default: 60, doc: "validity of an SMS code" }),
    otpLength: r.int("SMS_OTP_LENGTH", {
      default: 6,
      min: 6,
      max: 10,
      doc: "digits of an SMS code",
    }),
    provider: r.oneOf("SMS_PROVIDER", ["", ...SMS_PROVIDERS] as const, {
      default: "",
      doc: "twilio, messagebird, textlocal or vonage",
    }),
    template: r.string("SMS_TEMPLATE", { default: "Your code is {{ .Code }}", doc: "SMS text" }),
    maxAttempts: r.int("SMS_OTP_MAX_ATTEMPTS", {
      default: 5,
      min: 1,
      doc: "wrong codes allowed per code",
    }),
    timeoutSec: r.seconds("SMS_TIMEOUT", {
      default: 10,
      doc: "seconds an SMS gateway call may take",
    }),
    twilio: {
      accountSid: r.string("SMS_TWILIO_ACCOUNT_SID", { doc: "Twilio account SID" }),
      authToken: r.string("SMS_TWILIO_AUTH_TOKEN", { doc: "Twilio auth token" }),
      messageServiceSid: r.string("SMS_TWILIO_MESSAGE_SERVICE_SID", {
        doc: "messaging service SID or sender number",
      }),
      apiUrl: gatewayUrl(r, "SMS_TWILIO_API_URL", "https://api.twilio.com", "Twilio"),
    },
    messagebird: {
      accessKey: r.string("SMS_MESSAGEBIRD_ACCESS_KEY", { doc: "MessageBird access key" }),
      originator: r.string("SMS_MESSAGEBIRD_ORIGINATOR", { doc: "MessageBird sender" }),
      apiUrl: gatewayUrl(
        r,
        "SMS_MESSAGEBIRD_API_URL",
        "https://rest.messagebird.com",
        "MessageBird",
      ),
    },
    textlocal: {
      apiKey: r.string("SMS_TEXTLOCAL_API_KEY", { doc: "Textlocal API key" }),
      sender: r.string("SMS_TEXTLOCAL_SENDER", { doc: "Textlocal sender name" }),
      apiUrl: gatewayUrl(r, "SMS_TEXTLOCAL_API_URL", "https://api.txtlocal.com", "Textlocal"),
    },
    vonage: {
      apiKey: r.string("SMS_VONAGE_API_KEY", { doc: "Vonage API key" }),
      apiSecret: r.string("SMS_VONAGE_API_SECRET", { doc: "Vonage API secret" }),
      from: r.string("SMS_VONAGE_FROM", { doc: "Vonage sender" }),
      apiUrl: gatewayUrl(r, "SMS_VONAGE_API_URL", "https://rest.nexmo.com", "Vonage"),
    },
  };
  if (sms.provider && !sms.autoconfirm) checkCredentials(r, sms, sms.provider);
  return sms;
}

function gatewayUrl(r: ConfigReader, name: string, url: string, gateway: string): string {
  return r.url(name, { default: url, doc: `${gateway} API base URL (tests, proxies)` });
}

/** The chosen gateway's credentials are all set. */
function checkCredentials(r: ConfigReader, sms: SmsConfig, p: SmsProviderName): void {
  const need: Record<SmsProviderName, [string, string][]> = {
    twilio: [
      ["SMS_TWILIO_ACCOUNT_SID", sms.twilio.accountSid],
      ["SMS_TWILIO_AUTH_TOKEN", sms.twilio.authToken],
      ["SMS_TWILIO_MESSAGE_SERVICE_SID", sms.twilio.messageServiceSid],
    ],
    messagebird: [
      ["SMS_MESSAGEBIRD_ACCESS_KEY", sms.messagebird.accessKey],
      ["SMS_MESSAGEBIRD_ORIGINATOR", sms.messagebird.originator],
    ],
    textlocal: [["SMS_TEXTLOCAL_API_KEY", sms.textlocal.apiKey]],
    vonage: [
      ["SMS_VONAGE_API_KEY", sms.vonage.apiKey],
      ["SMS_VONAGE_API_SECRET", sms.vonage.apiSecret],
      ["SMS_VONAGE_FROM", sms.vonage.from],
    ],
  };
  for (const [name, v] of need[p]) {
    if (!v) r.problem(`AUTHSVC_${name}: required when SMS_PROVIDER is ${p}`);
  }
}

/**
 * SMS gateways: one file per provider, chosen by `SMS_PROVIDER`. Each speaks
 * its provider's documented HTTP API at the base URL
 * `AUTHSVC_SMS_<PROVIDER>_API_URL`, with a `SMS_TIMEOUT` limit.
 */
import type { Config, SmsProviderName } from "../config/mod.ts";
import { MessagebirdProvider } from "./messagebird.ts";
import type { SmsProvider } from "./provider.ts";
import { TextlocalProvider } from "./textlocal.ts";
import { TwilioProvider } from "./twilio.ts";
import { VonageProvider } from "./vonage.ts";

export type { SmsMessage, SmsProvider, SmsReceipt } from "./provider.ts";
export { renderSmsTemplate, SmsSendError } from "./provider.ts";

/** The provider `name` configured in `sms`. */
export function createSmsProvider(sms: Config["sms"], name: SmsProviderName): SmsProvider {
  switch (name) {
    case "twilio":
      return new TwilioProvider(sms.twilio, sms.timeoutSec);
    case "messagebird":
      return new MessagebirdProvider(sms.messagebird, sms.timeoutSec);
    case "textlocal":
      return new TextlocalProvider(sms.textlocal, sms.timeoutSec);
    case "vonage":
      return new VonageProvider(sms.vonage, sms.timeoutSec);
  }
}

/** The configured provider, or null when `SMS_PROVIDER` is unset. */
export function configuredSmsProvider(config: Config): SmsProvider | null {
  return config.sms.provider ? createSmsProvider(config.sms, config.sms.provider) : null;
}

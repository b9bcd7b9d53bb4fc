/**
 * What the use cases of the domain work with: the domain's services and the
 * adapters (mail, SMS, providers) they call. The service container
 * (server/services.ts) builds one object that is also a `Domain`; the domain
 * names this interface, never the container, so its imports point one way.
 */
import type { Config } from "../config/mod.ts";
import type { Db } from "../db/db.ts";
import type { Logger } from "../observe/log.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { ProviderRegistry } from "../providers/registry.ts";
import type { Clock } from "./clock.ts";
import type { JwtService } from "./jwt.ts";
import type { PasswordHasher } from "./passwords.ts";
import type { Sessions } from "./sessions.ts";
import type { Users } from "./users.ts";
import type { AuditLog } from "./audit.ts";
import type { Events } from "./events.ts";
import type { Mfa } from "./mfa.ts";
import type { OneTimeTokens } from "./otp.ts";
import type { SendLimits } from "./send_limits.ts";
import type { SmsService } from "./phone.ts";
import type { Hooks } from "./hooks.ts";
import type { Cleanup } from "./cleanup.ts";
import type { OAuthStates } from "./oauth_state.ts";

/** The services the use cases call. */
export interface Domain {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  jwt: JwtService;
  users: Users;
  sessions: Sessions;
  passwords: PasswordHasher;
  /** In-process domain events (metrics and tracing subscribe). */
  events: Events;
  /** The audit log. */
  audit: AuditLog;
  /** MFA factors and challenges (auth/mfa.ts). */
  mfa: Mfa;
  /** One-time tokens: e-mail links and codes, SMS codes, nonces (auth/otp.ts). */
  otp: OneTimeTokens;
  /** E-mail and SMS send limits counted in the database (auth/send_limits.ts). */
  sendLimits: SendLimits;
  /** Renders and sends mails; `mailer.notify(kind, user, vars)` for notifications (mail/mailer.ts). */
  mailer: Mailer;
  /** SMS codes to phones: `sms.sendUserCode`, `sms.verify`, `sms.sendCode` for MFA (auth/phone.ts). */
  sms: SmsService;
  /** Auth hooks (auth/hooks.ts). */
  hooks: Hooks;
  /** Deletes dead rows in the background; createApp starts it (auth/cleanup.ts). */
  cleanup: Cleanup;
  /** The enabled external providers (providers/registry.ts). */
  providers: ProviderRegistry;
  /** Sealed, single-use OAuth states of /authorize and /callback (auth/oauth_state.ts). */
  oauthStates: OAuthStates;
}

/** Who asked, as the use cases record it (audit entries, sessions, hooks). */
export interface RequestMeta {
  /** The client's IP address ("" when unknown). */
  ip: string;
  userAgent?: string;
  /** Aborted when the client went away (a password hash not yet begun is skipped). */
  signal?: AbortSignal;
}

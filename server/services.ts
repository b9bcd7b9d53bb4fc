/**
 * Everything a request handler may use, built once from Config. Handlers get
 * it as their second argument (api/routes.ts), middleware from the hono
 * context (`c.get("services")`). Nothing here reads globals: Config and
 * the clock are passed in, so a test can build a server with any settings and
 * any time.
 */
import type { Config } from "./config/mod.ts";
import type { Domain } from "./auth/deps.ts";
import type { Db } from "./db/db.ts";
import type { Clock } from "./auth/clock.ts";
import { JwtService } from "./auth/jwt.ts";
import { PasswordHasher } from "./auth/passwords.ts";
import { Sessions } from "./auth/sessions.ts";
import { Users } from "./auth/users.ts";
import type { Logger } from "./observe/log.ts";
import { AuditLog } from "./auth/audit.ts";
import { Events } from "./auth/events.ts";
import { Mfa } from "./auth/mfa.ts";
import { OneTimeTokens } from "./auth/otp.ts";
import { SendLimits } from "./auth/send_limits.ts";
import { Cleanup } from "./auth/cleanup.ts";
import { Mailer } from "./mail/mailer.ts";
import { DevInbox } from "./console/inbox.ts";
import { SmsService } from "./auth/phone.ts";
import { configuredSmsProvider } from "./sms/mod.ts";
import { Hooks, installHooks } from "./auth/hooks_install.ts";
import { RateLimiter } from "./security/rate_limit.ts";
import { ProviderRegistry } from "./providers/registry.ts";
import { OAuthStates } from "./auth/oauth_state.ts";

/** The services of one server: the domain's, and what only HTTP uses. */
export interface Services extends Domain {
  /** The per-client request limits (security/rate_limit.ts), counted by the `limit` middleware. */
  limiter: RateLimiter;
  /** Run at shutdown, in reverse order of registration. */
  onClose: (() => Promise<void> | void)[];
}

/** Builds the services over an open database. */
export async function buildServices(
  config: Config,
  db: Db,
  clock: Clock,
  log: Logger,
): Promise<Services> {
  const jwt = await JwtService.create(config);
  const users = new Users(db);
  const passwords = new PasswordHasher(
    undefined,
    undefined,
    undefined,
    config.password.hasherNice,
  );
  const sessions = new Sessions(db, config, jwt, users, clock);
  const events = new Events();
  const audit = new AuditLog(db, events);
  const mfa = new Mfa(db, config, clock, users);
  sessions.factorsOf = (userId, q) => mfa.factorsJson(userId, q);
  sessions.audit = audit;
  const sendLimits = new SendLimits(db, config, clock);
  const otp = new OneTimeTokens(db, config.jwt.secret, clock);
  const s: Services = {
    config,
    db,
    clock,
    log,
    jwt,
    users,
    sessions,
    passwords,
    events,
    audit,
    mfa,
    otp,
    sendLimits,
    mailer: new Mailer(config, log, events, sendLimits, clock),
    sms: new SmsService(
      config,
      db,
      clock,
      log,
      events,
      users,
      otp,
      sendLimits,
      configuredSmsProvider(config),
    ),
    hooks: new Hooks(config, db, log),
    cleanup: new Cleanup(db, config, clock, log),
    limiter: new RateLimiter(config, db, clock),
    providers: new ProviderRegistry(config, log),
    oauthStates: new OAuthStates(db, config.jwt.secret, clock),
    onClose: [],
  };
  installHooks(s);
  s.onClose.push(() => passwords.close());
  s.onClose.push(() => s.mailer.close());
  // The console's development inbox: only where mails are not sent at all.
  if (config.console.enabled && s.mailer.logOnly) s.mailer.inbox = new DevInbox();
  return s;
}

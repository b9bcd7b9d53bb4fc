/**
 * The server's configuration: `.env` plus the process environment (the
 * environment wins), read once into one typed, frozen `Config`. Every setting
 * (docs/settings.md) is read with the `AUTHSVC_` prefix except those marked "no prefix"
 * (PORT, DATABASE_URL, LOG_LEVEL) and the OTEL_* / DEBUG variables.
 *
 * A missing or malformed setting is collected as one line naming the variable;
 * `loadConfig` throws `ConfigError` with all of them, so nothing starts
 * half-configured.
 */
import { parse as parseDotenv } from "../deps.ts";
import { ConfigReader, type Rate, type SettingDoc } from "./config_reader.ts";
import { type HooksConfig, readHookSettings } from "./auth/hook_settings.ts";
import { applyGoTrueAliases, settingOf } from "./gotrue_aliases.ts";
import { templateProblem } from "./mail/go_template.ts";
import { isPublishedSecret, PUBLISHED_JWT_SECRETS } from "./published_secrets.ts";
import { PROVIDER_SPECS, type ProviderName, PROVIDERS } from "./providers/specs.ts";

export type { Rate, SettingDoc };
export { PUBLISHED_JWT_SECRETS };

/** PGlite's data directory (and the generated JWT secret's) when DB_DATA_DIR is unset. */
export const DEFAULT_DATA_DIR = "./.authsvc/data";

export { type ProviderName, PROVIDERS };

/** Mail kinds, as `MAILER_SUBJECTS_<KIND>` / `MAILER_TEMPLATES_<KIND>` name them. */
export const MAIL_KINDS = [
  "invite",
  "confirmation",
  "recovery",
  "magic_link",
  "email_change",
  "reauthentication",
  "password_changed_notification",
  "email_changed_notification",
  "phone_changed_notification",
  "identity_linked_notification",
  "identity_unlinked_notification",
  "mfa_factor_enrolled_notification",
  "mfa_factor_unenrolled_notification",
] as const;
export type MailKind = typeof MAIL_KINDS[number];

const DEFAULT_SUBJECTS: Record<MailKind, string> = {
  invite: "You have been invited",
  confirmation: "Confirm Your Signup",
  recovery: "Reset Your Password",
  magic_link: "Your Magic Link",
  email_change: "Confirm Email Change",
  reauthentication: "Confirm reauthentication",
  password_changed_notification: "Your password has been changed",
  email_changed_notification: "Your email address has been changed",
  phone_changed_notification: "Your phone number has been changed",
  identity_linked_notification: "A new identity has been linked",
  identity_unlinked_notification: "An identity has been unlinked",
  mfa_factor_enrolled_notification: "A new MFA factor has been enrolled",
  mfa_factor_unenrolled_notification: "An MFA factor has been unenrolled",
};

export const NOTIFICATIONS = [
  "password_changed",
  "email_changed",
  "phone_changed",
  "identity_linked",
  "identity_unlinked",
  "mfa_factor_enrolled",
  "mfa_factor_unenrolled",
] as const;
export type NotificationKind = typeof NOTIFICATIONS[number];

export const SMS_PROVIDERS = ["twilio", "messagebird", "textlocal", "vonage"] as const;
export type SmsProviderName = typeof SMS_PROVIDERS[number];

export const LOG_LEVELS = ["panic", "fatal", "error", "warn", "info", "debug"] as const;
export type LogLevel = typeof LOG_LEVELS[number];

/** Settings of one external provider. */
export interface ProviderConfig {
  enabled: boolean;
  clientId: string;
  secret: string;
  redirectUri: string;
  /** Base URL override (self-hosted instances, realms, tests); "" when unset. */
  url: string;
}

/** The whole configuration. */
export interface Config {
  siteUrl: string;
  uriAllowList: string[];
  disableSignup: boolean;
  api: {
    host: string;
    port: number;
    externalUrl: string;
    requestIdHeader: string;
    maxBodyBytes: number;
    /** Users whose GET /user answer a process keeps (api/user_profile.ts); 0: none. */
    userCacheSize: number;
    /** A request's database work is given up after this long (504 request_timeout); 0: never. */
    maxRequestDurationMs: number;
  };
  db: {
    driver: "postgres";
    /** PostgreSQL connection string; "" selects embedded PGlite. */
    url: string;
    dataDir: string;
    /** 0 means no limit of ours (the driver's pool is then sized generously). */
    maxPoolSize: number;
    /** Table prefix: "" or "<ns>_". */
    namespace: string;
    /** PostgreSQL's statement_timeout for every connection, ms; 0: none. */
    statementTimeoutMs: number;
    /** Unnamed statements, parsed on every execution (transaction poolers). */
    unnamedStatements: boolean;
  };
  jwt: {
    secret: string;
    exp: number;
    aud: string;
    adminGroupName: string;
    defaultGroupName: string;
    adminRoles: string[];
    /** Key set for asymmetric signing (JWKs with private parts for the signing key). */
    keys: JsonWebKey[];
  };
  external: {
    emailEnabled: boolean;
    phoneEnabled: boolean;
    anonymousUsersEnabled: boolean;
    providers: Record<ProviderName, ProviderConfig>;
    /** Least time between two fetches of a provider's key set for an unknown `kid`. */
    jwksCooldownSec: number;
  };
  password: {
    minLength: number;
    /** Character sets; a password needs one character of each. */
    requiredCharacters: string[];
    /** Leaked-password check against Have I Been Pwned's range API (auth/pwned.ts). */
    hibp: { enabled: boolean; failClosed: boolean; userAgent: string; apiUrl: string };
    /** Nice value of the bcrypt worker threads on Linux (auth/bcrypt_worker.ts); 0: unchanged. */
    hasherNice: number;
  };
  security: {
    refreshTokenRotationEnabled: boolean;
    refreshTokenReuseInterval: number;
    refreshTokenStamped: boolean;
    updatePasswordRequireReauthentication: boolean;
    updatePasswordRequireCurrentPassword: boolean;
    manualLinkingEnabled: boolean;
    /**
     * An admin's `email_confirm` / `phone_confirm` on an account nobody has
     * proven is a first confirmation like any other (auth/confirm.ts): only a
     * password sent with it stays, and the account's other identities,
     * factors and sessions end. Off (GoTrue's behaviour): the admin vouches
     * for the address and the account stays as it was signed up.
     */
    adminConfirmResetsUnproven: boolean;
    /**
     * Identity linking only in the PKCE flow (the link made at the code
     * exchange); the implicit flow's link is a 400 (docs/security.md).
     */
    linkIdentityRequirePkce: boolean;
    /**
     * The proxy header the client IP is read from (security/client_ip.ts), lower case; "" when
     * SECURITY_SB_FORWARDED_FOR_ENABLED is off.
     */
    forwardedForHeader: string;
    captcha: {
      enabled: boolean;
      provider: "hcaptcha" | "turnstile";
      secret: string;
      timeoutSec: number;
      /** Base URL override of the siteverify endpoint (tests). */
      verifyUrl: string;
    };
  };
  /** Auth hooks (auth/hooks.ts). */
  hooks: HooksConfig;
  /** Session limits (auth/session_limits.ts); 0 seconds: no limit. */
  sessions: {
    timeboxSec: number;
    inactivityTimeoutSec: number;
    singlePerUser: boolean;
  };
  rateLimit: {
    header: string;
    emailSent: Rate;
    smsSent: Rate;
    tokenRefresh: Rate;
    verify: Rate;
    otp: Rate;
    signup: Rate;
    anonymousUsers: Rate;
  };
  smtp: {
    host: string;
    port: number;
    user: string;
    pass: string;
    adminEmail: string;
    senderName: string;
    maxFrequency: number;
    /** Seconds between magic links / recovery mails to one address. */
    linkFrequency: number;
    /** Seconds to connect and to wait for each answer of the mail server. */
    timeoutSec: number;
  };
  mailer: {
    autoconfirm: boolean;
    otpExp: number;
    otpLength: number;
    secureEmailChangeEnabled: boolean;
    urlPaths: { invite: string; confirmation: string; recovery: string; emailChange: string };
    subjects: Record<MailKind, string>;
    templates: Record<MailKind, string>;
    notifications: Record<NotificationKind, boolean>;
    templateTimeoutSec: number;
    /** Development only: with SMTP_HOST unset, the log line of a mail carries its links. */
    logLinks: boolean;
  };
  sms: {
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
  };
  mfa: {
    maxEnrolledFactors: number;
    challengeExpiry: number;
    maxAttempts: number;
    totpEnabled: boolean;
    phoneEnabled: boolean;
  };
  /** Deleting dead rows in small batches (auth/cleanup.ts). */
  cleanup: {
    /** Seconds between one process's cleanup passes; 0: this process cleans nothing. */
    intervalSec: number;
    /** Rows deleted per statement. */
    batchSize: number;
    /** How long revoked refresh tokens, ended sessions, flows and challenges are kept, seconds. */
    graceSec: number;
    /** Audit entries older than this are deleted, seconds; 0: kept forever. */
    auditRetentionSec: number;
  };
  log: { level: LogLevel; file: string };
  tracing: { enabled: boolean; exporter: "opentelemetry" };
  metrics: {
    enabled: boolean;
    exporter: "opentelemetry" | "prometheus";
    prometheusHost: string;
    prometheusPort: number;
  };
  otel: { resourceAttributes: Record<string, string>; env: Record<string, string> };
  /** The operators' web console under /console/ (docs/console.md). */
  console: { enabled: boolean };
  debug: boolean;
}

/** Thrown when settings are missing or malformed: one line per problem. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Result of reading: the config, deprecation notes, and the documented settings. */
export interface LoadedConfig {
  config: Config;
  deprecations: string[];
  docs: SettingDoc[];
  /** GoTrue names read for ours (gotrue_aliases.ts), for the start-up log. */
  aliases: string[];
}

function isJwkArray(v: unknown): string | null {
  if (!Array.isArray(v)) return "expected a JSON array of JWKs";
  for (const k of v) {
    if (typeof k !== "object" || k === null || typeof (k as { kty?: unknown }).kty !== "string") {
      return "every key needs a kty";
    }
  }
  return null;
}

function splitCharacterSets(text: string): string[] {
  const sets: string[] = [];
  let cur = "";
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\" && text[i + 1] === ":") {
      cur += ":";
      i++;
    } else if (text[i] === ":") {
      if (cur) sets.push(cur);
      cur = "";
    } else cur += text[i];
  }
  if (cur) sets.push(cur);
  return sets;
}

function readProviders(r: ConfigReader): Record<ProviderName, ProviderConfig> {
  const out = {} as Record<ProviderName, ProviderConfig>;
  for (const p of PROVIDERS) {
    const X = `EXTERNAL_${p.toUpperCase()}`;
    const urlSetting = PROVIDER_SPECS[p].urlSetting ?? {};
    const enabled = r.bool(`${X}_ENABLED`, { doc: `enable sign-in with ${p}` });
    const pc: ProviderConfig = {
      enabled,
      clientId: r.string(`${X}_CLIENT_ID`, {
        required: enabled,
        doc: `${p} client id(s), comma-separated: docs/id_token.md`,
      }),
      secret: r.string(`${X}_SECRET`, { required: enabled, doc: `${p} client secret` }),
      redirectUri: r.string(`${X}_REDIRECT_URI`, {
        required: enabled,
        doc: `where ${p} returns with code and state (this server's /callback)`,
      }),
      url: r.url(`${X}_URL`, {
        required: enabled && urlSetting.required === true,
        default: urlSetting.default ?? "",
        doc: urlSetting.doc ?? `base URL override for ${p} (self-hosted instances, tests)`,
      }),
    };
    // Kept as written (a trailing slash counts at the provider), but it must be a URL.
    const protocol = URL.parse(pc.redirectUri)?.protocol;
    if (pc.redirectUri && protocol !== "http:" && protocol !== "https:") {
      r.problems.push(
        `${r.name(`${X}_REDIRECT_URI`)}: expected an http(s) URL, got "${pc.redirectUri}"`,
      );
    }
    out[p] = pc;
  }
  return out;
}

/** Reads a configuration from an environment map (already merged with `.env`). */
export function readConfig(given: Record<string, string | undefined>): LoadedConfig {
  const { env, notes: aliases, from } = applyGoTrueAliases(given);
  const r = new ConfigReader(env);
  const otelEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith("OTEL_") && v) otelEnv[k] = v;

  const subjects = {} as Record<MailKind, string>;
  const templates = {} as Record<MailKind, string>;
  for (const k of MAIL_KINDS) {
    subjects[k] = r.string(`MAILER_SUBJECTS_${k.toUpperCase()}`, {
      default: DEFAULT_SUBJECTS[k],
      doc: `subject of the ${k.replaceAll("_", " ")} mail`,
    });
    const why = templateProblem(subjects[k]);
    if (why) r.problem(`${r.name(`MAILER_SUBJECTS_${k.toUpperCase()}`)}: ${why}`);
    templates[k] = r.string(`MAILER_TEMPLATES_${k.toUpperCase()}`, {
      doc: `URL of the HTML template of the ${k.replaceAll("_", " ")} mail`,
    });
  }
  const notifications = {} as Record<NotificationKind, boolean>;
  for (const n of NOTIFICATIONS) {
    notifications[n] = r.bool(`MAILER_NOTIFICATIONS_${n.toUpperCase()}_ENABLED`, {
      doc: `send the ${n.replaceAll("_", " ")} notification mail`,
    });
  }

  const config: Config = {
    siteUrl: r.url("SITE_URL", {
      required: true,
      doc: "base URL of the site; its host is an allowed redirect_to",
    }),
    uriAllowList: r.list("URI_ALLOW_LIST", {
      doc: "further allowed redirect_to URLs, with * globs",
    }),
    disableSignup: r.bool("DISABLE_SIGNUP", { doc: "only invites create users" }),
    api: {
      host: r.string("API_HOST", { default: "0.0.0.0", doc: "listen address" }),
      port: r.int("PORT", {
        noPrefix: true,
        aliases: ["AUTHSVC_API_PORT"],
        default: 8081,
        min: 0,
        max: 65535,
        doc: "listen port",
      }),
      externalUrl: r.url("API_EXTERNAL_URL", {
        required: true,
        doc: "URL at which this server is reachable; the JWT iss",
      }),
      requestIdHeader: r.string("REQUEST_ID_HEADER", {
        doc: "incoming header to inherit the request id from",
      }),
      maxBodyBytes: r.int("API_MAX_BODY_BYTES", {
        default: 1 << 20,
        min: 1024,
        doc: "largest request body accepted",
      }),
      userCacheSize: r.int("API_USER_CACHE_SIZE", {
        default: 10_000,
        min: 0,
        doc:
          "users whose GET /user answer a process keeps, revision-checked (2 KB each on average); 0: none",
      }),
      maxRequestDurationMs: r.seconds("API_MAX_REQUEST_DURATION", {
        default: 10,
        doc: "a request's database work is given up after this long: 504 request_timeout; 0: never",
      }) * 1000,
    },
    db: {
      driver: r.oneOf("DB_DRIVER", ["postgres"] as const, {
        default: "postgres",
        doc: "must be postgres",
      }),
      url: r.string("DATABASE_URL", {
        noPrefix: true,
        aliases: ["AUTHSVC_DB_DATABASE_URL"],
        doc: "PostgreSQL connection string; unset: embedded PGlite",
      }),
      dataDir: r.string("DB_DATA_DIR", {
        default: DEFAULT_DATA_DIR,
        doc: "PGlite data directory (when no DATABASE_URL); memory:// keeps it in memory",
      }),
      maxPoolSize: r.int("DB_MAX_POOL_SIZE", {
        default: 0,
        min: 0,
        doc: "PostgreSQL connections; 0 means unlimited",
      }),
      namespace: "",
      statementTimeoutMs: r.seconds("DB_STATEMENT_TIMEOUT", {
        default: 5,
        doc: "PostgreSQL statement_timeout of every connection (DATABASE_URL's wins); 0: none",
      }) * 1000,
      unnamedStatements: r.oneOf("DB_PREPARED_STATEMENTS", ["named", "unnamed"] as const, {
        default: "named",
        doc: "unnamed: no prepared statement outlives a transaction (PgBouncer, Supavisor)",
      }) === "unnamed",
    },
    jwt: {
      secret: jwtSecret(r),
      exp: r.int("JWT_EXP", { default: 3600, min: 30, doc: "access token lifetime in seconds" }),
      aud: r.string("JWT_AUD", { default: "authenticated", doc: "audience of issued tokens" }),
      adminGroupName: r.string("JWT_ADMIN_GROUP_NAME", {
        default: "admin",
        doc:
          "inherited, no effect (logged as deprecated when set); admin access goes by JWT_ADMIN_ROLES",
      }),
      defaultGroupName: r.string("JWT_DEFAULT_GROUP_NAME", { doc: "group given to new users" }),
      adminRoles: r.list("JWT_ADMIN_ROLES", {
        default: ["service_role", "supabase_admin"],
        doc: "role claims accepted as admin",
      }),
      keys: r.json<JsonWebKey[]>("JWT_KEYS", isJwkArray, {
        default: [],
        doc: "JSON array of JWKs; the key whose key_ops has sign signs, all verify",
      }) ?? [],
    },
    external: {
      emailEnabled: r.bool("EXTERNAL_EMAIL_ENABLED", {
        default: true,
        doc: "e-mail sign-up and sign-in",
      }),
      phoneEnabled: r.bool("EXTERNAL_PHONE_ENABLED", {
        default: false,
        doc: "phone sign-up and sign-in",
      }),
      anonymousUsersEnabled: r.bool("EXTERNAL_ANONYMOUS_USERS_ENABLED", {
        doc: "anonymous sign-ins",
      }),
      providers: readProviders(r),
      jwksCooldownSec: r.seconds("EXTERNAL_JWKS_COOLDOWN", {
        default: 30,
        doc: "least time between key-set fetches for an unknown ID-token kid (docs/id_token.md)",
      }),
    },
    password: {
      minLength: r.int("PASSWORD_MIN_LENGTH", {
        default: 6,
        min: 1,
        max: 72,
        doc: "minimum password length",
      }),
      requiredCharacters: splitCharacterSets(
        r.string("PASSWORD_REQUIRED_CHARACTERS", {
          doc: "character sets split by : (\\: is a literal colon)",
        }),
      ),
      hibp: {
        enabled: r.bool("PASSWORD_HIBP_ENABLED", {
          doc: "refuse passwords found in Have I Been Pwned (weak_password, reason pwned)",
        }),
        failClosed: r.bool("PASSWORD_HIBP_FAIL_CLOSED", {
          doc: "when the check cannot be made, refuse the request (500) instead of allowing it",
        }),
        userAgent: r.string("PASSWORD_HIBP_USER_AGENT", {
          default: "https://github.com/supabase/gotrue",
          doc: "User-Agent of the range API requests",
        }),
        apiUrl: r.url("PASSWORD_HIBP_API_URL", {
          default: "https://api.pwnedpasswords.com",
          doc: "base URL of the range API (GET {url}/range/{5 hex}); tests and mirrors",
        }),
      },
      hasherNice: r.int("PASSWORD_HASHER_NICE", {
        default: 10,
        min: 0,
        max: 19,
        doc:
          "nice value of the bcrypt worker threads (Linux; 0: as the process; docs/passwords.md)",
      }),
    },
    security: {
      refreshTokenRotationEnabled: r.bool("SECURITY_REFRESH_TOKEN_ROTATION_ENABLED", {
        default: true,
        doc: "rotate refresh tokens and detect reuse",
      }),
      refreshTokenReuseInterval: r.seconds("SECURITY_REFRESH_TOKEN_REUSE_INTERVAL", {
        default: 10,
        doc:
          "seconds: a used refresh token gets the live one if issued this soon after its use (docs/sessions.md)",
      }),
      refreshTokenStamped: r.bool("SECURITY_REFRESH_TOKEN_STAMPED", {
        default: true,
        doc:
          "new refresh tokens begin with their time of issue; off while older servers run (docs/database.md)",
      }),
      updatePasswordRequireReauthentication: r.bool(
        "SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION",
        {
          doc: "a password change needs a nonce from /reauthenticate",
        },
      ),
      updatePasswordRequireCurrentPassword: r.bool(
        "SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD",
        {
          doc:
            "a password change needs current_password (except after a recovery, magic link or OTP)",
        },
      ),
      manualLinkingEnabled: r.bool("SECURITY_MANUAL_LINKING_ENABLED", {
        doc: "users may link and unlink identities (/user/identities); off: 404, as GoTrue",
      }),
      adminConfirmResetsUnproven: r.bool("SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN", {
        doc: "admin email_confirm of an unconfirmed account keeps only a password sent with it",
      }),
      linkIdentityRequirePkce: r.bool("SECURITY_LINK_IDENTITY_REQUIRE_PKCE", {
        doc: "link identities in the PKCE flow only (refuse implicit-flow links)",
      }),
      forwardedForHeader: forwardedForHeader(r, from),
      captcha: {
        enabled: r.bool("SECURITY_CAPTCHA_ENABLED", { doc: "require captcha_token" }),
        provider: r.oneOf("SECURITY_CAPTCHA_PROVIDER", ["hcaptcha", "turnstile"] as const, {
          default: "hcaptcha",
          doc: "hCaptcha or Turnstile",
        }),
        secret: "",
        timeoutSec: r.seconds("SECURITY_CAPTCHA_TIMEOUT", {
          default: 10,
          doc: "captcha verification timeout",
        }),
        verifyUrl: r.url("SECURITY_CAPTCHA_VERIFY_URL", { doc: "siteverify URL override (tests)" }),
      },
    },
    hooks: readHookSettings(r),
    sessions: {
      timeboxSec: r.seconds("SESSIONS_TIMEBOX", {
        default: 0,
        doc: "a session cannot be refreshed this long after its sign-in (e.g. 24h); 0: no limit",
      }),
      inactivityTimeoutSec: r.seconds("SESSIONS_INACTIVITY_TIMEOUT", {
        default: 0,
        doc: "a session not refreshed for this long cannot be refreshed any more; 0: no limit",
      }),
      singlePerUser: r.bool("SESSIONS_SINGLE_PER_USER", {
        doc:
          "only a user's most recently active session can be refreshed; a new sign-in ends the others",
      }),
    },
    rateLimit: {
      header: r.string("RATE_LIMIT_HEADER", {
        doc: "header whose value keys the per-IP request limits",
      }),
      emailSent: r.rate("RATE_LIMIT_EMAIL_SENT", { count: 30, windowSec: 3600 }, {
        doc: "e-mails per hour",
      }),
      smsSent: r.rate("RATE_LIMIT_SMS_SENT", { count: 30, windowSec: 3600 }, {
        doc: "SMS per hour",
      }),
      tokenRefresh: r.rate("RATE_LIMIT_TOKEN_REFRESH", { count: 150, windowSec: 300 }, {
        doc: "/token requests per IP",
      }),
      verify: r.rate("RATE_LIMIT_VERIFY", { count: 30, windowSec: 300 }, {
        doc: "/verify requests per IP",
      }),
      otp: r.rate("RATE_LIMIT_OTP", { count: 30, windowSec: 300 }, { doc: "/otp requests per IP" }),
      signup: r.rate("RATE_LIMIT_SIGNUP", { count: 30, windowSec: 300 }, {
        doc: "/signup requests per IP",
      }),
      anonymousUsers: r.rate("RATE_LIMIT_ANONYMOUS_USERS", { count: 30, windowSec: 3600 }, {
        doc: "anonymous sign-ins per IP",
      }),
    },
    smtp: {
      host: r.string("SMTP_HOST", { doc: "mail server; unset: mails are logged instead" }),
      port: r.int("SMTP_PORT", { default: 587, min: 1, max: 65535, doc: "mail server port" }),
      user: r.string("SMTP_USER", { doc: "SMTP user" }),
      pass: r.string("SMTP_PASS", { doc: "SMTP password" }),
      adminEmail: r.string("SMTP_ADMIN_EMAIL", { default: "admin@localhost", doc: "From address" }),
      senderName: r.string("SMTP_SENDER_NAME", { doc: "From name (default: SMTP_ADMIN_EMAIL)" }),
      maxFrequency: r.seconds("SMTP_MAX_FREQUENCY", {
        default: 900,
        doc: "seconds between mails of one kind to one address",
      }),
      linkFrequency: r.seconds("SMTP_LINK_FREQUENCY", {
        default: 60,
        doc: "seconds between magic links / recovery mails to one address",
      }),
      timeoutSec: r.seconds("SMTP_TIMEOUT", {
        default: 10,
        doc: "seconds to connect to and wait for each answer of the mail server",
      }),
    },
    mailer: {
      autoconfirm: r.bool("MAILER_AUTOCONFIRM", { doc: "sign-ups need no e-mail confirmation" }),
      otpExp: r.seconds("MAILER_OTP_EXP", {
        default: 86400,
        doc: "validity of an e-mail link or code",
      }),
      otpLength: r.int("MAILER_OTP_LENGTH", {
        default: 6,
        min: 6,
        max: 10,
        doc: "digits of an e-mail code",
      }),
      secureEmailChangeEnabled: r.bool("MAILER_SECURE_EMAIL_CHANGE_ENABLED", {
        default: true,
        doc: "an e-mail change is confirmed by both addresses",
      }),
      urlPaths: {
        invite: r.string("MAILER_URLPATHS_INVITE", { default: "/verify" }),
        confirmation: r.string("MAILER_URLPATHS_CONFIRMATION", { default: "/verify" }),
        recovery: r.string("MAILER_URLPATHS_RECOVERY", { default: "/verify" }),
        emailChange: r.string("MAILER_URLPATHS_EMAIL_CHANGE", { default: "/verify" }),
      },
      subjects,
      templates,
      notifications,
      templateTimeoutSec: r.seconds("MAILER_TEMPLATE_TIMEOUT", {
        default: 10,
        doc: "template fetch timeout",
      }),
      logLinks: r.bool("MAILER_LOG_LINKS", {
        doc:
          "development only: with SMTP_HOST unset, write each mail's links (credentials) to the log",
      }),
    },
    sms: {
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
        accountSid: r.string("SMS_TWILIO_ACCOUNT_SID"),
        authToken: r.string("SMS_TWILIO_AUTH_TOKEN"),
        messageServiceSid: r.string("SMS_TWILIO_MESSAGE_SERVICE_SID", {
          doc: "messaging service SID or sender number",
        }),
        apiUrl: r.url("SMS_TWILIO_API_URL", { default: "https://api.twilio.com" }),
      },
      messagebird: {
        accessKey: r.string("SMS_MESSAGEBIRD_ACCESS_KEY"),
        originator: r.string("SMS_MESSAGEBIRD_ORIGINATOR"),
        apiUrl: r.url("SMS_MESSAGEBIRD_API_URL", { default: "https://rest.messagebird.com" }),
      },
      textlocal: {
        apiKey: r.string("SMS_TEXTLOCAL_API_KEY"),
        sender: r.string("SMS_TEXTLOCAL_SENDER"),
        apiUrl: r.url("SMS_TEXTLOCAL_API_URL", { default: "https://api.txtlocal.com" }),
      },
      vonage: {
        apiKey: r.string("SMS_VONAGE_API_KEY"),
        apiSecret: r.string("SMS_VONAGE_API_SECRET"),
        from: r.string("SMS_VONAGE_FROM"),
        apiUrl: r.url("SMS_VONAGE_API_URL", { default: "https://rest.nexmo.com" }),
      },
    },
    mfa: {
      maxEnrolledFactors: r.int("MFA_MAX_ENROLLED_FACTORS", {
        default: 10,
        min: 1,
        doc: "factors per user",
      }),
      challengeExpiry: r.seconds("MFA_CHALLENGE_EXPIRY_DURATION", {
        default: 300,
        doc: "challenge validity",
      }),
      maxAttempts: r.int("MFA_MAX_ATTEMPTS", {
        default: 5,
        min: 1,
        doc: "wrong codes per challenge",
      }),
      totpEnabled: r.bool("MFA_TOTP_ENROLL_ENABLED", { default: true, doc: "TOTP factors" }),
      phoneEnabled: r.bool("MFA_PHONE_ENROLL_ENABLED", { default: false, doc: "phone factors" }),
    },
    cleanup: {
      intervalSec: r.seconds("CLEANUP_INTERVAL", {
        default: 60,
        doc: "how often each process deletes dead rows (0: never); see docs/operations.md",
      }),
      batchSize: r.int("CLEANUP_BATCH_SIZE", {
        default: 100,
        min: 1,
        max: 10000,
        doc: "rows deleted per cleanup statement",
      }),
      graceSec: r.seconds("CLEANUP_GRACE", {
        default: 86400,
        doc: "how long revoked refresh tokens, ended sessions and unused flows are kept",
      }),
      auditRetentionSec: r.seconds("AUDIT_LOG_RETENTION", {
        default: 0,
        doc: "audit entries older than this are deleted (0: kept forever)",
      }),
    },
    log: {
      level: r.oneOf("LOG_LEVEL", LOG_LEVELS, {
        noPrefix: true,
        default: "info",
        doc: "log level",
      }),
      file: r.string("LOG_FILE", { doc: "append logs to this file" }),
    },
    tracing: {
      enabled: r.bool("TRACING_ENABLED", { doc: "OpenTelemetry traces over OTLP" }),
      exporter: r.oneOf("TRACING_EXPORTER", ["opentelemetry"] as const, {
        default: "opentelemetry",
        doc: "traces go out over OTLP/HTTP (OTEL_EXPORTER_OTLP_* variables)",
      }),
    },
    metrics: {
      enabled: r.bool("METRICS_ENABLED", { doc: "request, sign-in and runtime metrics" }),
      exporter: r.oneOf("METRICS_EXPORTER", ["opentelemetry", "prometheus"] as const, {
        default: "opentelemetry",
        doc: "push over OTLP/HTTP, or serve Prometheus text",
      }),
      prometheusHost: r.string("OTEL_EXPORTER_PROMETHEUS_HOST", {
        noPrefix: true,
        default: "0.0.0.0",
        doc: "address of the Prometheus listener (paths / and /metrics)",
      }),
      prometheusPort: r.int("OTEL_EXPORTER_PROMETHEUS_PORT", {
        noPrefix: true,
        default: 9100,
        doc: "port of the Prometheus listener",
        min: 0,
        max: 65535,
      }),
    },
    otel: {
      resourceAttributes: Object.fromEntries(
        r.list("OTEL_RESOURCE_ATTRIBUTES", { noPrefix: true, doc: "k=v,k2=v2 resource attributes" })
          .map((kv) => kv.split("=").map((s) => s.trim()))
          .filter((p) => p.length === 2 && p[0]),
      ),
      env: otelEnv,
    },
    console: {
      enabled: r.bool("CONSOLE_ENABLED", {
        doc: "serve the operators' web console under /console/",
      }),
    },
    debug: r.bool("DEBUG", { noPrefix: true, doc: "report exporter problems" }),
  };

  config.security.captcha.secret = r.string("SECURITY_CAPTCHA_SECRET", {
    required: config.security.captcha.enabled,
    doc: "captcha provider secret",
  });
  const ns = r.string("DB_NAMESPACE", { doc: "prefix of every table name (<ns>_users)" });
  if (ns && !/^[a-z_][a-z0-9_]{0,30}$/.test(ns)) {
    r.problem(`AUTHSVC_DB_NAMESPACE: expected lower-case letters, digits and _, got "${ns}"`);
  }
  config.db.namespace = ns ? `${ns}_` : "";
  if (!config.smtp.senderName) config.smtp.senderName = config.smtp.adminEmail;
  checkJwtSecret(r, config.jwt.secret, config.jwt.keys);
  if (config.jwt.keys.length && !config.jwt.keys.some((k) => k.key_ops?.includes("sign"))) {
    r.problem("AUTHSVC_JWT_KEYS: no key has key_ops containing sign");
  }
  if (config.sms.provider && !config.sms.autoconfirm) {
    const p = config.sms.provider;
    const need: Record<SmsProviderName, [string, string][]> = {
      twilio: [
        ["SMS_TWILIO_ACCOUNT_SID", config.sms.twilio.accountSid],
        ["SMS_TWILIO_AUTH_TOKEN", config.sms.twilio.authToken],
        ["SMS_TWILIO_MESSAGE_SERVICE_SID", config.sms.twilio.messageServiceSid],
      ],
      messagebird: [
        ["SMS_MESSAGEBIRD_ACCESS_KEY", config.sms.messagebird.accessKey],
        ["SMS_MESSAGEBIRD_ORIGINATOR", config.sms.messagebird.originator],
      ],
      textlocal: [["SMS_TEXTLOCAL_API_KEY", config.sms.textlocal.apiKey]],
      vonage: [
        ["SMS_VONAGE_API_KEY", config.sms.vonage.apiKey],
        ["SMS_VONAGE_API_SECRET", config.sms.vonage.apiSecret],
        ["SMS_VONAGE_FROM", config.sms.vonage.from],
      ],
    };
    for (const [name, v] of need[p]) {
      if (!v) r.problem(`AUTHSVC_${name}: required when SMS_PROVIDER is ${p}`);
    }
  }

  if (env.AUTHSVC_JWT_ADMIN_GROUP_NAME?.trim()) {
    // group data in JWTs is an inherited GoTrue feature: admin access goes by JWT_ADMIN_ROLES
    r.deprecations.push(
      "AUTHSVC_JWT_ADMIN_GROUP_NAME is deprecated and has no effect: admin endpoints accept the roles of AUTHSVC_JWT_ADMIN_ROLES",
    );
  }
  r.deprecated("OPERATOR_TOKEN", "multi-instance mode is not supported");
  r.deprecated("API_ENDPOINT", "multi-instance mode is not supported");
  r.deprecated("MULTI_INSTANCE_MODE", "multi-instance mode is not supported");

  if (r.problems.length) {
    // A problem with a value given under GoTrue's name names that variable too.
    throw new ConfigError(r.problems.map((p) => {
      const name = /^[A-Z0-9_]+/.exec(p)?.[0] ?? "";
      return from[name] ? p.replace(name, `${name} (set as ${from[name]})`) : p;
    }));
  }
  return { config: deepFreeze(config), deprecations: r.deprecations, docs: r.docs, aliases };
}

/**
 * The header SECURITY_SB_FORWARDED_FOR_ENABLED trusts: the one of the name it
 * was set under. Under ours, `Authsvc-Proxy-Forwarded-For`; under GoTrue's
 * `GOTRUE_SECURITY_SB_FORWARDED_FOR_ENABLED`, GoTrue's `Sb-Forwarded-For`,
 * the header a proxy in front of GoTrue sets and strips (it passes ours on
 * from the client untouched). Never a header the operator did not name.
 */
function forwardedForHeader(r: ConfigReader, from: Record<string, string>): string {
  const name = "SECURITY_SB_FORWARDED_FOR_ENABLED";
  const on = r.bool(name, {
    doc: "client IP from Authsvc-Proxy-Forwarded-For; under GoTrue's name from Sb-Forwarded-For",
  });
  if (!on) return "";
  return from[r.name(name)] === `GOTRUE_${name}`
    ? "sb-forwarded-for"
    : "authsvc-proxy-forwarded-for";
}

/** Shortest JWT_SECRET accepted (RFC 7518 3.2: an HS256 key of at least 256 bits). */
export const MIN_JWT_SECRET_BYTES = 32;

/**
 * JWT_SECRET. The reader needs it; the documented default is `serve`'s
 * (server/jwt_secret.ts fills it in when the variable is absent).
 */
function jwtSecret(r: ConfigReader): string {
  const secret = r.string("JWT_SECRET", {
    doc: "HS256 secret, 32+ bytes; when unset, one is generated and kept in DB_DATA_DIR/jwt_secret",
  });
  if (!secret) r.problem("AUTHSVC_JWT_SECRET: required, expected string");
  return secret;
}

/**
 * Refuses a published or short JWT_SECRET, and a symmetric key of JWT_KEYS
 * that is a published secret, unless JWT_ALLOW_WEAK_SECRET says this is a
 * development server. The secret itself never appears in a problem.
 */
function checkJwtSecret(r: ConfigReader, secret: string, keys: JsonWebKey[]): void {
  const allowWeak = r.bool("JWT_ALLOW_WEAK_SECRET", {
    doc: "development only: accept a published JWT_SECRET or one shorter than 32 bytes",
  });
  if (allowWeak) return;
  const how =
    "unset it to have a random one generated, or set 32+ random bytes (AUTHSVC_JWT_ALLOW_WEAK_SECRET=true accepts it on a development server)";
  keys.forEach((k, i) => {
    if (k.kty !== "oct" || typeof k.k !== "string") return;
    let bytes: Uint8Array | undefined;
    try {
      bytes = Uint8Array.from(
        atob(k.k.replaceAll("-", "+").replaceAll("_", "/")),
        (ch) => ch.charCodeAt(0),
      );
    } catch { /* not base64url: no secret anyone published */ }
    if (bytes && isPublishedSecret(bytes)) {
      r.problem(
        `AUTHSVC_JWT_KEYS: key ${i} (kty oct) is a published example secret, anyone could sign admin tokens with it; set 32+ random bytes (AUTHSVC_JWT_ALLOW_WEAK_SECRET=true accepts it on a development server)`,
      );
    }
  });
  if (!secret) return;
  if (isPublishedSecret(secret)) {
    r.problem(
      `AUTHSVC_JWT_SECRET: is a published example secret, anyone could sign admin tokens with it; ${how}`,
    );
  } else if (new TextEncoder().encode(secret).length < MIN_JWT_SECRET_BYTES) {
    r.problem(
      `AUTHSVC_JWT_SECRET: shorter than ${MIN_JWT_SECRET_BYTES} bytes, too easy to guess; ${how}`,
    );
  }
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object") {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

/**
 * Merges a `.env` file (when present) with the process environment; the
 * environment wins, whatever name it uses: a file's setting is dropped when
 * the environment sets the same setting under any of its names (ours,
 * GoTrue's, an alias; gotrue_aliases.ts `settingOf`).
 */
export async function readEnvironment(envFile = ".env"): Promise<Record<string, string>> {
  let fileVars: Record<string, string> = {};
  try {
    fileVars = parseDotenv(await Deno.readTextFile(envFile));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const env = Deno.env.toObject();
  const inEnv = new Set(Object.keys(env).map(settingOf));
  const kept = Object.entries(fileVars).filter(([name]) => !inEnv.has(settingOf(name)));
  return { ...Object.fromEntries(kept), ...env };
}

/** Reads `.env` plus environment into a Config; throws ConfigError. */
export async function loadConfig(envFile?: string): Promise<LoadedConfig> {
  return readConfig(await readEnvironment(envFile));
}

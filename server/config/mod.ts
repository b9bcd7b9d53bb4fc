/**
 * The server's configuration: `.env` plus the process environment (the
 * environment wins), read once into one typed, frozen `Config`. Every setting
 * (docs/settings.md) is read with the `AUTHSVC_` prefix except those marked "no prefix"
 * (PORT, DATABASE_URL, LOG_LEVEL) and the OTEL_* / DEBUG variables.
 *
 * Each section of the settings is read by its own file of this directory
 * (api.ts, db.ts, jwt.ts, ...) and is one heading of docs/settings.md; this
 * module puts them together in the order the document lists them.
 *
 * A missing or malformed setting is collected as one line naming the variable;
 * `loadConfig` throws `ConfigError` with all of them, so nothing starts
 * half-configured.
 */
import { parse as parseDotenv } from "../../deps.ts";
import { API_SECTION, type ApiConfig, readSiteSettings, type SiteSettings } from "./api.ts";
import { CLEANUP_SECTION, type CleanupConfig, readCleanup } from "./cleanup.ts";
import { DB_SECTION, type DbConfig, readDb } from "./db.ts";
import {
  EXTERNAL_SECTION,
  type ExternalConfig,
  type ProviderConfig,
  type ProviderName,
  PROVIDERS,
  readExternal,
} from "./external.ts";
import { applyGoTrueAliases, settingOf } from "./gotrue_aliases.ts";
import { HOOKS_SECTION, type HooksConfig, readHookSettings } from "./hooks.ts";
import { JWT_SECTION, type JwtConfig, MIN_JWT_SECRET_BYTES, readJwt } from "./jwt.ts";
import {
  MAIL_KINDS,
  MAIL_SECTION,
  type MailKind,
  type MailSettings,
  type NotificationKind,
  NOTIFICATIONS,
  readMail,
} from "./mail.ts";
import { MFA_SECTION, type MfaConfig, readMfa } from "./mfa.ts";
import {
  LOG_LEVELS,
  type LogLevel,
  OBSERVABILITY_SECTION,
  type ObservabilitySettings,
  readObservability,
} from "./observability.ts";
import { PASSWORD_SECTION, type PasswordConfig, readPassword } from "./password.ts";
import { PUBLISHED_JWT_SECRETS } from "./published_secrets.ts";
import { RATE_LIMIT_SECTION, type RateLimitConfig, readRateLimits } from "./rate_limit.ts";
import { ConfigReader, type Rate, type SectionDoc, type SettingDoc } from "./reader.ts";
import { readSecurity, SECURITY_SECTION, type SecurityConfig } from "./security.ts";
import { readSessions, SESSIONS_SECTION, type SessionsConfig } from "./sessions.ts";
import {
  readSms,
  SMS_PROVIDERS,
  SMS_SECTION,
  type SmsConfig,
  type SmsProviderName,
} from "./sms.ts";

export { DEFAULT_DATA_DIR } from "./db.ts";
export {
  type ApiConfig,
  LOG_LEVELS,
  type LogLevel,
  MAIL_KINDS,
  type MailKind,
  MIN_JWT_SECRET_BYTES,
  type NotificationKind,
  NOTIFICATIONS,
  type ProviderConfig,
  type ProviderName,
  PROVIDERS,
  PUBLISHED_JWT_SECRETS,
  type Rate,
  type SectionDoc,
  type SettingDoc,
  SMS_PROVIDERS,
  type SmsProviderName,
};

/** The whole configuration: one key (or a few, for the site and mail) per section. */
export interface Config extends SiteSettings, MailSettings, ObservabilitySettings {
  db: DbConfig;
  jwt: JwtConfig;
  external: ExternalConfig;
  password: PasswordConfig;
  security: SecurityConfig;
  /** Auth hooks (auth/hooks.ts). */
  hooks: HooksConfig;
  /** Session limits (auth/session_limits.ts); 0 seconds: no limit. */
  sessions: SessionsConfig;
  rateLimit: RateLimitConfig;
  sms: SmsConfig;
  mfa: MfaConfig;
  /** Deleting dead rows in small batches (auth/cleanup.ts). */
  cleanup: CleanupConfig;
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
  /** Every setting read, in the order of `sections` (docs/settings.md). */
  docs: SettingDoc[];
  /** The sections, in the order they are read. */
  sections: SectionDoc[];
  /** GoTrue names read for ours (gotrue_aliases.ts), for the start-up log. */
  aliases: string[];
}

const INHERITED_SECTION: SectionDoc = {
  title: "Inherited from GoTrue, no effect",
  about:
    "Accepted so a GoTrue `.env` starts unchanged; a value set is noted as deprecated in the start-up log.",
};

/** Reads a configuration from an environment map (already merged with `.env`). */
export function readConfig(given: Record<string, string | undefined>): LoadedConfig {
  const { env, notes: aliases, from } = applyGoTrueAliases(given);
  const r = new ConfigReader(env);
  const config: Config = {
    ...r.section(API_SECTION, () => readSiteSettings(r)),
    db: r.section(DB_SECTION, () => readDb(r)),
    jwt: r.section(JWT_SECTION, () => readJwt(r)),
    external: r.section(EXTERNAL_SECTION, () => readExternal(r)),
    password: r.section(PASSWORD_SECTION, () => readPassword(r)),
    security: r.section(SECURITY_SECTION, () => readSecurity(r, from)),
    sessions: r.section(SESSIONS_SECTION, () => readSessions(r)),
    rateLimit: r.section(RATE_LIMIT_SECTION, () => readRateLimits(r)),
    hooks: r.section(HOOKS_SECTION, () => readHookSettings(r)),
    ...r.section(MAIL_SECTION, () => readMail(r)),
    sms: r.section(SMS_SECTION, () => readSms(r)),
    mfa: r.section(MFA_SECTION, () => readMfa(r)),
    cleanup: r.section(CLEANUP_SECTION, () => readCleanup(r)),
    ...r.section(OBSERVABILITY_SECTION, () => readObservability(r)),
  };
  r.section(INHERITED_SECTION, () => {
    r.deprecated("OPERATOR_TOKEN", "multi-instance mode is not supported");
    r.deprecated("API_ENDPOINT", "multi-instance mode is not supported");
    r.deprecated("MULTI_INSTANCE_MODE", "multi-instance mode is not supported");
  });

  if (r.problems.length) {
    // A problem with a value given under GoTrue's name names that variable too.
    throw new ConfigError(r.problems.map((p) => {
      const name = /^[A-Z0-9_]+/.exec(p)?.[0] ?? "";
      return from[name] ? p.replace(name, `${name} (set as ${from[name]})`) : p;
    }));
  }
  return {
    config: deepFreeze(config),
    deprecations: r.deprecations,
    docs: r.docs,
    sections: r.sections,
    aliases,
  };
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

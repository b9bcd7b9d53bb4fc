/** Configuration: .env + environment, prefixes, types, defaults, problems, deprecations. */
import assert from "node:assert/strict";
import {
  ConfigError,
  loadConfig,
  readConfig,
  readEnvironment,
} from "../../../server/config/mod.ts";

const MIN = {
  AUTHSVC_SITE_URL: "http://localhost:3000",
  AUTHSVC_API_EXTERNAL_URL: "http://localhost:8081",
  AUTHSVC_JWT_SECRET: "a-secret-that-is-long-enough-0123456789",
};

function problems(env: Record<string, string>): string[] {
  try {
    readConfig(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    return e.problems;
  }
  return [];
}

Deno.test("documented defaults with only the required settings; the config is frozen", () => {
  const { config } = readConfig(MIN);
  assert.equal(config.api.port, 8081);
  assert.equal(config.api.host, "0.0.0.0");
  assert.equal(config.jwt.exp, 3600);
  assert.equal(config.password.minLength, 6);
  assert.equal(config.smtp.maxFrequency, 900);
  assert.equal(config.sms.maxFrequency, 60);
  assert.equal(config.db.maxPoolSize, 0);
  assert.equal(config.db.url, "");
  assert.equal(config.log.level, "info");
  assert.equal(config.mailer.autoconfirm, false);
  assert.equal(config.security.refreshTokenReuseInterval, 10);
  assert.equal(config.mailer.subjects.confirmation, "Confirm Your Signup");
  assert.equal(config.mailer.urlPaths.recovery, "/verify");
  assert.equal(config.metrics.prometheusPort, 9100);
  assert.deepEqual(config.rateLimit.tokenRefresh, { count: 150, windowSec: 300 });
  assert.ok(Object.isFrozen(config) && Object.isFrozen(config.jwt));
  assert.throws(() => {
    (config as { siteUrl: string }).siteUrl = "x";
  });
});

Deno.test("names need the AUTHSVC_ prefix except PORT, DATABASE_URL, LOG_LEVEL, OTEL_*, DEBUG", () => {
  assert.deepEqual(
    problems({ SITE_URL: "http://a.test", API_EXTERNAL_URL: "http://b.test", JWT_SECRET: "x" }),
    // API_EXTERNAL_URL is one of GoTrue's own unprefixed names, read as an alias
    // (server/config/gotrue_aliases.ts, issue 23); SITE_URL and JWT_SECRET are not.
    [
      "AUTHSVC_SITE_URL: required, expected URL",
      "AUTHSVC_JWT_SECRET: required, expected string",
    ],
  );
  const { config } = readConfig({
    ...MIN,
    PORT: "9999",
    DATABASE_URL: "postgres://x@db/y",
    LOG_LEVEL: "debug",
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel:4318",
    OTEL_RESOURCE_ATTRIBUTES: "team=auth, env = test",
    DEBUG: "true",
    AUTHSVC_DB_NAMESPACE: "auth",
  });
  assert.equal(config.api.port, 9999);
  assert.equal(config.db.url, "postgres://x@db/y");
  assert.equal(config.log.level, "debug");
  assert.equal(config.otel.env.OTEL_EXPORTER_OTLP_ENDPOINT, "http://otel:4318");
  assert.deepEqual(config.otel.resourceAttributes, { team: "auth", env: "test" });
  assert.equal(config.debug, true);
  assert.equal(config.db.namespace, "auth_");
  // the prefixed aliases of the no-prefix names
  const alias = readConfig({
    ...MIN,
    AUTHSVC_API_PORT: "7000",
    AUTHSVC_DB_DATABASE_URL: "postgres://z@db/w",
  }).config;
  assert.equal(alias.api.port, 7000);
  assert.equal(alias.db.url, "postgres://z@db/w");
});

Deno.test("malformed values: one problem per variable, naming it and what it expects", () => {
  const p = problems({
    ...MIN,
    AUTHSVC_JWT_EXP: "an hour",
    AUTHSVC_DISABLE_SIGNUP: "perhaps",
    AUTHSVC_URI_ALLOW_LIST: "http://ok.test",
    AUTHSVC_API_EXTERNAL_URL: "ftp://files",
    PORT: "70000",
    AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "10 parsecs",
    AUTHSVC_JWT_KEYS: "{not json",
    AUTHSVC_RATE_LIMIT_EMAIL_SENT: "lots",
    AUTHSVC_DB_NAMESPACE: "Bad-Name",
    LOG_LEVEL: "verbose",
    AUTHSVC_EXTERNAL_GITHUB_ENABLED: "true",
  });
  const expect = [
    "AUTHSVC_JWT_EXP: expected an integer",
    "AUTHSVC_DISABLE_SIGNUP: expected true or false",
    "AUTHSVC_API_EXTERNAL_URL: expected an http(s) URL",
    "PORT: expected at most 65535",
    "AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: expected seconds or a duration",
    "AUTHSVC_JWT_KEYS: expected JSON",
    "AUTHSVC_RATE_LIMIT_EMAIL_SENT: expected a count",
    "AUTHSVC_DB_NAMESPACE: expected lower-case letters",
    "LOG_LEVEL: expected one of",
    "AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID: required",
    "AUTHSVC_EXTERNAL_GITHUB_SECRET: required",
    "AUTHSVC_EXTERNAL_GITHUB_REDIRECT_URI: required",
  ];
  for (const e of expect) assert.ok(p.some((l) => l.startsWith(e)), `${e}\n${p.join("\n")}`);
  assert.equal(p.length, expect.length, p.join("\n"));
  assert.ok(p.find((l) => l.startsWith("AUTHSVC_JWT_EXP"))!.includes('"an hour"'));
});

Deno.test("typed values: durations, rates, lists, character sets with an escaped colon", () => {
  const { config } = readConfig({
    ...MIN,
    AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "1m30s",
    AUTHSVC_RATE_LIMIT_EMAIL_SENT: "5/10m",
    AUTHSVC_RATE_LIMIT_SMS_SENT: "12",
    AUTHSVC_URI_ALLOW_LIST: "http://a.test/*, https://*.b.test",
    AUTHSVC_PASSWORD_REQUIRED_CHARACTERS: "abc:0123456789:\\:;",
    AUTHSVC_JWT_ADMIN_ROLES: "service_role,boss",
    AUTHSVC_MAILER_AUTOCONFIRM: "1",
  });
  assert.equal(config.security.refreshTokenReuseInterval, 90);
  assert.deepEqual(config.rateLimit.emailSent, { count: 5, windowSec: 600 });
  assert.deepEqual(config.rateLimit.smsSent, { count: 12, windowSec: 3600 });
  assert.deepEqual(config.uriAllowList, ["http://a.test/*", "https://*.b.test"]);
  assert.deepEqual(config.password.requiredCharacters, ["abc", "0123456789", ":;"]);
  assert.deepEqual(config.jwt.adminRoles, ["service_role", "boss"]);
  assert.equal(config.mailer.autoconfirm, true);
});

Deno.test("inherited multi-instance and group settings are accepted and reported as deprecated", () => {
  const { deprecations } = readConfig({
    ...MIN,
    AUTHSVC_OPERATOR_TOKEN: "op",
    AUTHSVC_API_ENDPOINT: "http://x",
  });
  assert.equal(deprecations.length, 2);
  assert.ok(deprecations.some((d) => d.startsWith("AUTHSVC_OPERATOR_TOKEN is deprecated")));
  assert.ok(deprecations.some((d) => d.startsWith("AUTHSVC_API_ENDPOINT is deprecated")));
  assert.deepEqual(readConfig(MIN).deprecations, []);
  // group data in JWTs (inherited from GoTrue): accepted, without effect, and said so
  const group = readConfig({ ...MIN, AUTHSVC_JWT_ADMIN_GROUP_NAME: "admins" });
  assert.equal(group.deprecations.length, 1);
  assert.match(group.deprecations[0], /^AUTHSVC_JWT_ADMIN_GROUP_NAME is deprecated/);
});

Deno.test(".env and the environment: the environment wins; a missing file is no error", async () => {
  const dir = await Deno.makeTempDir();
  const name = "AUTHSVC_CONFIG_TEST_ONLY_" + crypto.randomUUID().slice(0, 8).toUpperCase();
  try {
    const file = `${dir}/.env`;
    await Deno.writeTextFile(
      file,
      [
        "# comment",
        ...Object.entries(MIN).map(([k, v]) => `${k}=${v}`),
        "AUTHSVC_JWT_EXP=120",
        `${name}=from-file`,
        'AUTHSVC_SMTP_SENDER_NAME="Auth Team"',
      ].join("\n"),
    );
    Deno.env.set(name, "from-env");
    const env = await readEnvironment(file);
    assert.equal(env[name], "from-env");
    assert.equal(env.AUTHSVC_JWT_EXP, "120");
    const { config } = await loadConfig(file);
    assert.equal(config.jwt.exp, 120);
    assert.equal(config.smtp.senderName, "Auth Team");
    const none = await readEnvironment(`${dir}/missing.env`);
    assert.equal(none[name], "from-env");
  } finally {
    Deno.env.delete(name);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every documented setting is read (and so listed in docs/settings.md), under its right name", () => {
  const specNames = [
    "SITE_URL",
    "URI_ALLOW_LIST",
    "OPERATOR_TOKEN",
    "DISABLE_SIGNUP",
    "EXTERNAL_EMAIL_ENABLED",
    "EXTERNAL_PHONE_ENABLED",
    "EXTERNAL_ANONYMOUS_USERS_ENABLED",
    "RATE_LIMIT_HEADER",
    "RATE_LIMIT_EMAIL_SENT",
    "PASSWORD_MIN_LENGTH",
    "PASSWORD_REQUIRED_CHARACTERS",
    "SECURITY_REFRESH_TOKEN_ROTATION_ENABLED",
    "SECURITY_REFRESH_TOKEN_REUSE_INTERVAL",
    "SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION",
    "SECURITY_SB_FORWARDED_FOR_ENABLED",
    "API_HOST",
    "API_PORT",
    "API_ENDPOINT",
    "API_EXTERNAL_URL",
    "REQUEST_ID_HEADER",
    "DB_DRIVER",
    "DB_DATABASE_URL",
    "DB_MAX_POOL_SIZE",
    "DB_NAMESPACE",
    "LOG_FILE",
    "TRACING_ENABLED",
    "TRACING_EXPORTER",
    "METRICS_ENABLED",
    "METRICS_EXPORTER",
    "JWT_SECRET",
    "JWT_EXP",
    "JWT_AUD",
    "JWT_ADMIN_GROUP_NAME",
    "JWT_DEFAULT_GROUP_NAME",
    "JWT_ADMIN_ROLES",
    "SMTP_ADMIN_EMAIL",
    "SMTP_HOST",
    "SMTP_PORT",
    "SMTP_USER",
    "SMTP_PASS",
    "SMTP_MAX_FREQUENCY",
    "SMTP_SENDER_NAME",
    "MAILER_AUTOCONFIRM",
    "MAILER_OTP_EXP",
    "MAILER_URLPATHS_INVITE",
    "MAILER_URLPATHS_CONFIRMATION",
    "MAILER_URLPATHS_RECOVERY",
    "MAILER_URLPATHS_EMAIL_CHANGE",
    "SMS_AUTOCONFIRM",
    "SMS_MAX_FREQUENCY",
    "SMS_OTP_EXP",
    "SMS_OTP_LENGTH",
    "SMS_PROVIDER",
    "SMS_TWILIO_ACCOUNT_SID",
    "SMS_TWILIO_AUTH_TOKEN",
    "SMS_TWILIO_MESSAGE_SERVICE_SID",
    "SMS_MESSAGEBIRD_ACCESS_KEY",
    "SMS_MESSAGEBIRD_ORIGINATOR",
    "SECURITY_CAPTCHA_ENABLED",
    "SECURITY_CAPTCHA_PROVIDER",
    "SECURITY_CAPTCHA_SECRET",
    "SECURITY_CAPTCHA_TIMEOUT",
  ].map((n) => `AUTHSVC_${n}`);
  for (const p of ["APPLE", "GITHUB", "GITLAB", "KEYCLOAK", "WORKOS"]) {
    for (const s of ["ENABLED", "CLIENT_ID", "SECRET", "REDIRECT_URI", "URL"]) {
      specNames.push(`AUTHSVC_EXTERNAL_${p}_${s}`);
    }
  }
  for (
    const kind of [
      "INVITE",
      "CONFIRMATION",
      "RECOVERY",
      "MAGIC_LINK",
      "EMAIL_CHANGE",
      "PASSWORD_CHANGED_NOTIFICATION",
      "EMAIL_CHANGED_NOTIFICATION",
      "MFA_FACTOR_ENROLLED_NOTIFICATION",
      "MFA_FACTOR_UNENROLLED_NOTIFICATION",
    ]
  ) specNames.push(`AUTHSVC_MAILER_SUBJECTS_${kind}`, `AUTHSVC_MAILER_TEMPLATES_${kind}`);
  for (const kind of ["PHONE_CHANGED", "IDENTITY_LINKED", "IDENTITY_UNLINKED"]) {
    specNames.push(`AUTHSVC_MAILER_TEMPLATES_${kind}_NOTIFICATION`);
  }
  for (
    const n of [
      "PASSWORD_CHANGED",
      "EMAIL_CHANGED",
      "PHONE_CHANGED",
      "IDENTITY_LINKED",
      "IDENTITY_UNLINKED",
      "MFA_FACTOR_ENROLLED",
      "MFA_FACTOR_UNENROLLED",
    ]
  ) specNames.push(`AUTHSVC_MAILER_NOTIFICATIONS_${n}_ENABLED`);
  // no prefix (docs/settings.md: PORT, DATABASE_URL, LOG_LEVEL, OTEL_* and DEBUG)
  specNames.push(
    "PORT",
    "DATABASE_URL",
    "LOG_LEVEL",
    "OTEL_EXPORTER_PROMETHEUS_HOST",
    "OTEL_EXPORTER_PROMETHEUS_PORT",
    "OTEL_RESOURCE_ATTRIBUTES",
    "DEBUG",
  );
  const read = new Set(readConfig(MIN).docs.flatMap((d) => d.name.split(" / ")));
  const missing = specNames.filter((n) => !read.has(n));
  assert.deepEqual(missing, []);
});

/**
 * The GoTrue instances the upstream auth-js tests talk to, recreated as our server (in-process,
 * 127.0.0.1, port 0) with the same settings under AUTHSVC_ names:
 *
 * - `cli`: the Supabase CLI stack of upstream's test/supabase/config.toml, which the main suites
 *   (GoTrueClient, GoTrueApi, pkce) use: sign-up on, e-mail confirmations off, anonymous
 *   sign-ins on, an RS256 signing key generated per run (the CLI's signing_keys.json, made by
 *   generate-signing-keys.js upstream) besides the CLI's published HS256 secret, the CLI's
 *   rate limits, refresh-token reuse interval 10 s, secure e-mail change on, 1 s between mails.
 * - the four GoTrue services of upstream's infra/docker-compose.yml that docker-tests/ use:
 *   `gotrue` (9999: sign-up on, autoconfirm off, phone by Twilio, Google on),
 *   `autoconfirm` (9998: autoconfirm on, anonymous on, HS256 key + RSA verify key),
 *   `disabled` (9997: sign-up off, e-mail and phone providers off),
 *   `asymmetric` (9996: autoconfirm on, RS256 signing key, HS256 verify key).
 *
 * Mail goes to a real SMTP server in this process (tests/helpers/smtp.ts) where the upstream
 * used inbucket, with the compose file's SMTP user and password; SMS to the local Twilio fake
 * (tests/helpers/sms_fakes.ts) where the upstream used Twilio with CI secrets. The database is
 * PostgreSQL when DATABASE_URL is set, else PGlite, one fresh namespace per instance.
 */
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../../helpers/smtp.ts";
import { startSmsFake } from "../../helpers/sms_fakes.ts";

/** Where each instance listens, and the CLI's signing keys; filled by startInstances. */
export const INSTANCES = {
  /** The Supabase CLI's auth (upstream: http://127.0.0.1:54321/auth/v1). */
  cli: "",
  /** docker-compose `gotrue` (upstream: http://localhost:9999). */
  gotrue: "",
  /** docker-compose `autoconfirm` (upstream: http://localhost:9998). */
  autoconfirm: "",
  /** docker-compose `disabled` (upstream: http://localhost:9997). */
  disabled: "",
  /** docker-compose `autoconfirm_with_asymmetric_keys` (upstream: http://localhost:9996). */
  asymmetric: "",
  /** The CLI's signing_keys.json: one RSA private JWK with kid, key_ops and alg. */
  signingKeys: [] as (JsonWebKey & { kid?: string })[],
};

/** The CLI's published JWT secret (config.toml `jwt_secret`). */
const CLI_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long";
/** docker-compose's GOTRUE_JWT_SECRET. */
const DOCKER_JWT_SECRET = "37c304f8-51aa-419a-a1af-06154e63707a";
/** docker-compose's GOTRUE_JWT_KEYS: an HS256 key and an RSA key (the same key in both services). */
const DOCKER_HS256 = {
  kty: "oct",
  k: "Z7-AyPyChGNcQsX16cPBV-pPBo4q-zckDxkq1VZjATo",
  kid: "12580317-221c-49b6-894a-f4473b8afe39",
  alg: "HS256",
};
const DOCKER_RSA = {
  kty: "RSA",
  n: "y3KQnIXK6wkPQ5m0XWp7z54BNZzXJk4IxXy81zFophdBBqz6u5OCMqWkC6i3WB7rlax4xjmxxyGyYRODooqCQTGahmpXryAAKc3g-gDIAq2MqVwlpmvXDavCVRK4hK7DZ6wK4MHrliSNHCuCkwIH3ofxTxgUwpSkOT58iU1ZOua5E1Y6R_Ozt3gLHha0Xa7a4V23pkP7n0xBvJPzIqiS3MZ4CQ_pz-buXYRgCPQkUJvXFFcuxmyqoYzorwQ1YVBOmH2XMx26RrCIxgj7geo9eVQ9u5qCPpQCGV5biqYMC4_m1kurOGf62URGRzXtmVzrW1PZJAeGoqMz5Fcfr8hiwQ",
  e: "AQAB",
  d: "C4XxquvpEmbw9mM-VAwz9w58Aw1fIkxJMuZdy9KAmue2RyqFCRrRxQycvgxQVi1qKpAaRx_9ccn20IjKa-psdkTY-8QKM2EcoUGH_KEOsxghX3ZYq5RwGdYgq7DjwqAjcTvNYe2Z6mcnlvDf9HOo_nG0uUYj5uGEa7meVCiNZUiSVdNGs-vOTUD8yB5pbZ4ute8ebuUzCWGQ3YwSNoWLa-dbECSO7jeobCapdB52MjEwE3_Ii8BWoySeDP-DEFX_5RTM2Zeh81zXAgmOxpZYTkjMsrznyxxBbXn7CdT8WMEXrreGZwIt3Mu6XpsLF5mwmTQ_ZyoM6tJpn5LeAhnCAQ",
  p: "6xy1skrnlrGUWtZFSHixn_eRA_O3GXKNBE4wziWodGZaFYsmFijZHbuQT0WFqc0epvLHNdNPvubFrVfV-U7ZIarfSSq6qBwBzDrDQS060MvjJIjrI16pKlx2X727FR1ZuwxT27dNg-wRTgKcZqXEalkvFOTEYBlCtw2-vzI0aRs",
  q: "3YWwOAs4GRZ9eq_fqNujACWJFyUO9QgEDPDOMg0EZhY7WkAlehTxxVXg65spWnfx_0GSc72I5N5qdbY-yDh2Dl7zIxvwnqZaKMJn4PEFkeAfyg62XlJlkHIwOVSj6vLNUDdDmG7bO2k6MyQ59jeuAemIljf9WhALNy8c9R0K3VM",
  dp:
    "KJ4LHcQnAjeng5Hk4kJHnXUtjls6VKEfj5DaiaKj2YgdI_-oEsf3ylUu9yLxloYjN4BVvgzFiBtiJzI3exyOEmzsqj1Bhe1guiGkvcvMj2nJ0fP9e1zNKM5UfPHQMjOh3tigXCLst0-_JZT55BnbNuw1YAytiFSU2_755xoLR-U",
  dq:
    "dCP7V-bJ6p1X_FLpOGau9wy262OKi_0_4mj-Mk-Q1tUhGRg4jeEdQRDdc6lN7Rilz-ZZGkVs2FGkD0MVd3PisXYmk2m6pfMhoe0K-WxkNy8Ce7Vq99jLVwgHMIenyS6zZjMTRYAZgPSShu2fVe-rU2VVLyz7r5RpzOzuibRIVfE",
  qi:
    "i7ND2teiVLkbaAs6rHfo5DiD1nlsORNYnn8Y_FjF6utb5OUljZ6-5WyEDJN9oIUX8o_Il9E6js-z7nhvPfFZHQN7ZWuYI0rO5qmsCDS9jWJ4GR61SgzZuLT7Jpp_KtwjW70x5wZ1Y-GugOP1Wct1YZWHn5YyLhvO6X_vttSmcS0",
  kid: "638c54b8-28c2-4b12-9598-ba12ef610a29",
  alg: "RS256",
};

/** Settings every docker-compose service shares (GOTRUE_* → AUTHSVC_*). */
function dockerCommon(smtp: TestSmtp, port: number): Record<string, string> {
  return {
    AUTHSVC_JWT_SECRET: DOCKER_JWT_SECRET,
    AUTHSVC_JWT_EXP: "3600",
    AUTHSVC_API_EXTERNAL_URL: `http://localhost:${port}`,
    AUTHSVC_SITE_URL: `http://localhost:${port}`,
    AUTHSVC_DISABLE_SIGNUP: "false",
    ...smtp.env,
    AUTHSVC_SMTP_USER: "GOTRUE_SMTP_USER",
    AUTHSVC_SMTP_PASS: "GOTRUE_SMTP_PASS",
    AUTHSVC_SMTP_ADMIN_EMAIL: "admin@email.com",
  };
}

/** A fresh RSA-2048 signing key as generate-signing-keys.js writes it. */
async function generateSigningKey(): Promise<JsonWebKey & { kid: string }> {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  delete jwk.key_ops;
  delete jwk.ext;
  return { ...jwk, kid: crypto.randomUUID(), key_ops: ["sign", "verify"], alg: "RS256" };
}

let running: { servers: TestServer[]; close: () => Promise<void> } | undefined;

/** Starts the five instances and fills INSTANCES. */
export async function startInstances(): Promise<void> {
  // The CLI's inbucket takes mail without AUTH; docker-compose's services log in to theirs.
  const inbucket = await startSmtp();
  const smtp = await startSmtp({ auth: { user: "GOTRUE_SMTP_USER", pass: "GOTRUE_SMTP_PASS" } });
  const sms = await startSmsFake("twilio");
  const signingKey = await generateSigningKey();
  const servers: TestServer[] = [];
  const start = async (env: Record<string, string>) => {
    const srv = await startTestServer(env);
    servers.push(srv);
    return srv.url;
  };
  // The CLI (config.toml). Its rate limits are config.toml's, per GoTrue's windows.
  INSTANCES.cli = await start({
    AUTHSVC_SITE_URL: "http://127.0.0.1:3000",
    AUTHSVC_URI_ALLOW_LIST: "https://127.0.0.1:3000,http://localhost:5173",
    AUTHSVC_API_EXTERNAL_URL: "http://127.0.0.1:54321/auth/v1",
    AUTHSVC_JWT_SECRET: CLI_JWT_SECRET,
    AUTHSVC_JWT_ALLOW_WEAK_SECRET: "true",
    AUTHSVC_JWT_KEYS: JSON.stringify([
      signingKey,
      {
        kty: "oct",
        k: btoa(CLI_JWT_SECRET).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""),
        kid: "cli-legacy-hs256",
        key_ops: ["verify"],
        alg: "HS256",
      },
    ]),
    AUTHSVC_JWT_EXP: "3600",
    AUTHSVC_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: "true",
    AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "10",
    AUTHSVC_DISABLE_SIGNUP: "false",
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
    AUTHSVC_PASSWORD_MIN_LENGTH: "6",
    AUTHSVC_RATE_LIMIT_EMAIL_SENT: "100/3600s",
    AUTHSVC_RATE_LIMIT_SMS_SENT: "100/3600s",
    AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: "100/3600s",
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "300/300s",
    AUTHSVC_RATE_LIMIT_SIGNUP: "100/300s",
    AUTHSVC_RATE_LIMIT_OTP: "100/300s",
    AUTHSVC_RATE_LIMIT_VERIFY: "100/300s",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "true",
    AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "false",
    AUTHSVC_SMTP_MAX_FREQUENCY: "1s",
    AUTHSVC_MAILER_OTP_LENGTH: "6",
    AUTHSVC_MAILER_OTP_EXP: "3600",
    ...inbucket.env,
    AUTHSVC_SMTP_ADMIN_EMAIL: "admin@email.com",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
    AUTHSVC_SMS_MAX_FREQUENCY: "1s",
    AUTHSVC_SMS_TEMPLATE: "Your code is {{ .Code }}",
    // config.toml: [auth.sms.twilio] enabled = false, so no SMS provider (sending an SMS fails).
    AUTHSVC_MFA_MAX_ENROLLED_FACTORS: "10",
    AUTHSVC_MFA_TOTP_ENROLL_ENABLED: "true",
    AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true",
    AUTHSVC_EXTERNAL_GOOGLE_ENABLED: "true",
    AUTHSVC_EXTERNAL_GOOGLE_CLIENT_ID:
      "53566906701-bmhc1ndue7hild39575gkpimhs06b7ds.apps.googleusercontent.com",
    AUTHSVC_EXTERNAL_GOOGLE_SECRET: "google-secret-not-used",
    // config.toml leaves redirect_uri empty; the CLI then passes its own callback URL.
    AUTHSVC_EXTERNAL_GOOGLE_REDIRECT_URI: "http://127.0.0.1:54321/auth/v1/callback",
  });
  INSTANCES.signingKeys = [signingKey];

  INSTANCES.gotrue = await start({
    ...dockerCommon(smtp, 9999),
    AUTHSVC_MAILER_URLPATHS_CONFIRMATION: "/verify",
    AUTHSVC_URI_ALLOW_LIST: "https://supabase.io/docs",
    AUTHSVC_MAILER_AUTOCONFIRM: "false",
    AUTHSVC_EXTERNAL_GOOGLE_ENABLED: "true",
    AUTHSVC_EXTERNAL_GOOGLE_CLIENT_ID:
      "53566906701-bmhc1ndue7hild39575gkpimhs06b7ds.apps.googleusercontent.com",
    AUTHSVC_EXTERNAL_GOOGLE_SECRET: "Sm3s8RE85rDcS36iMy8YjrpC",
    AUTHSVC_EXTERNAL_GOOGLE_REDIRECT_URI: "http://localhost:9999/callback",
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION: "Please confirm",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    ...sms.env,
    AUTHSVC_SMS_AUTOCONFIRM: "false",
  });
  INSTANCES.autoconfirm = await start({
    ...dockerCommon(smtp, 9998),
    AUTHSVC_JWT_KEYS: JSON.stringify([
      { ...DOCKER_HS256, key_ops: ["sign", "verify"] },
      { ...DOCKER_RSA, key_ops: ["verify"] },
    ]),
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    ...sms.env,
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  });
  INSTANCES.disabled = await start({
    ...dockerCommon(smtp, 9997),
    AUTHSVC_DISABLE_SIGNUP: "true",
    AUTHSVC_MAILER_AUTOCONFIRM: "false",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "false",
    AUTHSVC_EXTERNAL_EMAIL_ENABLED: "false",
  });
  INSTANCES.asymmetric = await start({
    ...dockerCommon(smtp, 9996),
    AUTHSVC_JWT_SECRET: DOCKER_HS256.k,
    AUTHSVC_JWT_KEYS: JSON.stringify([
      { ...DOCKER_HS256, key_ops: ["verify"] },
      { ...DOCKER_RSA, key_ops: ["sign", "verify"] },
    ]),
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    ...sms.env,
  });
  running = {
    servers,
    close: async () => {
      for (const s of servers) await s.close();
      await smtp.close();
      await inbucket.close();
      await sms.close();
    },
  };
}

/** Stops the instances, the SMTP server and the SMS fake. */
export async function closeInstances(): Promise<void> {
  const r = running;
  running = undefined;
  await r?.close();
}

/**
 * GoTrue's setting names as aliases: a GoTrue `.env` works unchanged, ours
 * win when both are set, and the start-up log names each alias used.
 */
import assert from "node:assert/strict";
import { ConfigError, readConfig } from "../../../server/config/mod.ts";
import { startTestServer } from "../../helpers/server.ts";
import { runServerCommand } from "../../helpers/process.ts";
import { call, email } from "./_helpers.ts";

/** A GoTrue-style environment, as Supabase's self-hosting example has it. */
const GOTRUE_ENV = {
  GOTRUE_SITE_URL: "http://localhost:3000",
  API_EXTERNAL_URL: "http://localhost:9999",
  GOTRUE_JWT_SECRET: "a-gotrue-secret-that-is-long-enough-0123456789",
  GOTRUE_JWT_EXP: "1800",
  GOTRUE_MAILER_AUTOCONFIRM: "true",
  GOTRUE_EXTERNAL_EMAIL_ENABLED: "true",
  GOTRUE_LOG_LEVEL: "warn",
  GOTRUE_RATE_LIMIT_EMAIL_SENT: "5",
};

Deno.test("a GoTrue environment alone configures the server", () => {
  const { config, aliases } = readConfig(GOTRUE_ENV);
  assert.equal(config.siteUrl, "http://localhost:3000");
  assert.equal(config.api.externalUrl, "http://localhost:9999");
  assert.equal(config.jwt.exp, 1800);
  assert.equal(config.mailer.autoconfirm, true);
  assert.equal(config.log.level, "warn");
  assert.equal(config.rateLimit.emailSent.count, 5);
  assert.ok(aliases.includes("AUTHSVC_JWT_EXP read from GoTrue's GOTRUE_JWT_EXP"));
  assert.ok(aliases.includes("AUTHSVC_API_EXTERNAL_URL read from GoTrue's API_EXTERNAL_URL"));
  assert.ok(aliases.includes("LOG_LEVEL read from GoTrue's GOTRUE_LOG_LEVEL"));
});

Deno.test("the AUTHSVC_ name wins over GoTrue's, and the log says so", () => {
  const { config, aliases } = readConfig({ ...GOTRUE_ENV, AUTHSVC_JWT_EXP: "900" });
  assert.equal(config.jwt.exp, 900);
  assert.ok(aliases.includes("AUTHSVC_JWT_EXP is set, so GoTrue's GOTRUE_JWT_EXP is ignored"));
});

Deno.test("a malformed GoTrue value is refused naming both names", () => {
  assert.throws(
    () => readConfig({ ...GOTRUE_ENV, GOTRUE_JWT_EXP: "soon" }),
    (e) =>
      e instanceof ConfigError &&
      e.problems.some((p) => p.startsWith("AUTHSVC_JWT_EXP (set as GOTRUE_JWT_EXP): expected")),
  );
});

Deno.test("GoTrue names take effect through the HTTP API", async () => {
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "",
    GOTRUE_MAILER_AUTOCONFIRM: "true",
    GOTRUE_PASSWORD_MIN_LENGTH: "12",
  });
  try {
    const short = await call(srv, "POST", "/signup", { email: email(), password: "only-9-ch" });
    assert.equal(short.status, 422);
    assert.deepEqual(short.body.weak_password, { reasons: ["length"] });
    const ok = await call(srv, "POST", "/signup", { email: email(), password: "twelve-chars-ok" });
    assert.equal(ok.status, 200);
    assert.equal(
      typeof ok.body.access_token,
      "string",
      "autoconfirmed by GOTRUE_MAILER_AUTOCONFIRM",
    );
  } finally {
    await srv.close();
  }
});

Deno.test("the start-up log names each GoTrue name used", async () => {
  const out = await runServerCommand(["migrate"], {
    GOTRUE_PASSWORD_MIN_LENGTH: "10",
    GOTRUE_SITE_URL: "http://elsewhere.example",
  });
  assert.equal(out.code, 0, out.stderr);
  const log = out.stdout + out.stderr;
  assert.match(log, /AUTHSVC_PASSWORD_MIN_LENGTH read from GoTrue's GOTRUE_PASSWORD_MIN_LENGTH/);
  assert.match(log, /AUTHSVC_SITE_URL is set, so GoTrue's GOTRUE_SITE_URL is ignored/);
});

/**
 * No setting is ignored in silence (issue 46, item 3): an unknown AUTHSVC_ or
 * GOTRUE_ name is warned about with the nearest known name, a setting's name
 * without its prefix is warned about naming the variable to set, and the
 * names GoTrue itself reads without a prefix are read, not warned about.
 */
import assert from "node:assert/strict";
import { readConfig } from "../../../server/config/mod.ts";
import { editDistance, settingNameWarnings } from "../../../server/config/names.ts";
import { BASE_ENV } from "../../helpers/server.ts";
import { runServerCommand } from "../../helpers/process.ts";

function warningsFor(extra: Record<string, string>): string[] {
  const env = { ...BASE_ENV, ...extra };
  return settingNameWarnings(env, readConfig(env).docs);
}

Deno.test("edit distance counts a swap of two letters as one edit", () => {
  assert.equal(editDistance("SMTP_HSOT", "SMTP_HOST"), 1);
  assert.equal(editDistance("SMTP_HOST", "SMTP_HOST"), 0);
  assert.equal(editDistance("PORT", "SITE_URL"), 7);
});

Deno.test("an unknown AUTHSVC_ name is warned about with the nearest setting", () => {
  assert.deepEqual(warningsFor({ AUTHSVC_SMTP_HSOT: "mail.example.com" }), [
    "AUTHSVC_SMTP_HSOT is not a setting and is ignored: did you mean AUTHSVC_SMTP_HOST?",
  ]);
  // Ours without a prefix: the suggestion is the bare name.
  assert.deepEqual(warningsFor({ AUTHSVC_LOG_LEVEL: "debug" }), [
    "AUTHSVC_LOG_LEVEL is not a setting and is ignored: did you mean LOG_LEVEL?",
  ]);
  assert.deepEqual(warningsFor({ AUTHSVC_MAILER_AUTOCONFRIM: "true" }), [
    "AUTHSVC_MAILER_AUTOCONFRIM is not a setting and is ignored: did you mean AUTHSVC_MAILER_AUTOCONFIRM?",
  ]);
  // Nothing near: the list of settings is named instead.
  assert.deepEqual(warningsFor({ AUTHSVC_COMPLETELY_DIFFERENT: "1" }), [
    "AUTHSVC_COMPLETELY_DIFFERENT is not a setting and is ignored (docs/settings.md lists every setting)",
  ]);
});

Deno.test("an unknown GOTRUE_ name is warned about; GoTrue's names of our settings are not", () => {
  assert.deepEqual(
    warningsFor({
      GOTRUE_SMTP_HOST: "mail.example.com", // ours under GoTrue's name: read
      GOTRUE_JWT_SECRET: "x".repeat(40),
      GOTRUE_LOG_LEVEL: "info",
      GOTRUE_API_PORT: "9999",
      GOTRUE_SMTP_HSOT: "typo",
      GOTRUE_SAML_ENABLED: "true", // a GoTrue feature this server does not have
      GOTRUE_EXTERNAL_ZOOM_ENABLED: "true", // a provider it does not have: not a typo of another
    }),
    [
      "GOTRUE_EXTERNAL_ZOOM_ENABLED is not read by this server and is ignored: it has no such setting (docs/gotrue_names.md)",
      "GOTRUE_SAML_ENABLED is not read by this server and is ignored: it has no such setting (docs/gotrue_names.md)",
      "GOTRUE_SMTP_HSOT is not a setting and is ignored: did you mean AUTHSVC_SMTP_HOST?",
    ],
  );
});

Deno.test("a setting's name without its prefix is warned about, unless GoTrue reads it so", () => {
  assert.deepEqual(warningsFor({ SMTP_HOST: "mail.example.com", JWT_EXP: "600" }), [
    "JWT_EXP is ignored: settings carry a prefix, set AUTHSVC_JWT_EXP",
    "SMTP_HOST is ignored: settings carry a prefix, set AUTHSVC_SMTP_HOST",
  ]);
  // GoTrue reads these without a prefix, and so does this server (gotrue_aliases.ts).
  assert.deepEqual(
    warningsFor({
      API_EXTERNAL_URL: "https://auth.example.com",
      DB_NAMESPACE: "auth",
      REQUEST_ID_HEADER: "X-Request-Id",
      PORT: "9999",
      DATABASE_URL: "postgres://x@y/z",
      LOG_LEVEL: "info",
    }),
    [],
  );
  // The prefixed name is set too: the operator already did the right thing.
  assert.deepEqual(warningsFor({ SMTP_HOST: "a", AUTHSVC_SMTP_HOST: "b" }), []);
  // Unrelated variables of the environment are not settings.
  assert.deepEqual(warningsFor({ HOME: "/root", HOSTNAME: "vm", PATH: "/bin" }), []);
});

Deno.test("every name the reader documents is known: no warning for the whole settings list", () => {
  const env: Record<string, string> = { ...BASE_ENV };
  const docs = readConfig(env).docs;
  for (const d of docs) for (const n of d.name.split(" / ")) env[n.trim()] ??= "";
  assert.deepEqual(settingNameWarnings(env, docs), []);
});

Deno.test("the start-up log warns about each of them, at level warn", async () => {
  const r = await runServerCommand(["migrate"], {
    AUTHSVC_SMTP_HSOT: "mail.example.com",
    SMTP_HOST: "mail.example.com",
    GOTRUE_SMTP_HSOT: "mail.example.com",
  });
  assert.equal(r.code, 0, r.stderr);
  const warnings = r.stdout.split("\n").filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l)).filter((l) => l.level === "warn").map((l) => l.msg);
  for (
    const expected of [
      "AUTHSVC_SMTP_HSOT is not a setting and is ignored: did you mean AUTHSVC_SMTP_HOST?",
      "GOTRUE_SMTP_HSOT is not a setting and is ignored: did you mean AUTHSVC_SMTP_HOST?",
      "SMTP_HOST is ignored: settings carry a prefix, set AUTHSVC_SMTP_HOST",
    ]
  ) assert.ok(warnings.includes(expected), `${expected}\n${warnings.join("\n")}`);
});

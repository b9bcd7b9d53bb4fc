import assert from "node:assert/strict";
import { renderSettingsDoc, SETTINGS_DOC } from "../../../scripts/settings_doc.ts";

Deno.test("docs/settings.md is up to date with server/config/mod.ts", async () => {
  const committed = await Deno.readTextFile(SETTINGS_DOC);
  const fresh = await renderSettingsDoc();
  assert.ok(
    committed === fresh,
    "docs/settings.md is out of date: run `deno run -A scripts/settings_doc.ts` and commit it",
  );
  // every setting server/config/ reads is in the table, with its type and default
  for (
    const name of [
      "AUTHSVC_SITE_URL",
      "PORT / AUTHSVC_API_PORT",
      "AUTHSVC_JWT_EXP",
      "AUTHSVC_MAILER_AUTOCONFIRM",
      "AUTHSVC_OPERATOR_TOKEN",
    ]
  ) {
    assert.ok(fresh.includes(`| \`${name}\` `), name);
  }
  assert.match(fresh, /\| `AUTHSVC_JWT_EXP` +\| integer +\| `3600` +\|/);
});

Deno.test("every setting in docs/settings.md has a type and a meaning", async () => {
  const rows = (await renderSettingsDoc()).split("\n").filter((l) => l.startsWith("| `"));
  assert.ok(rows.length > 150);
  for (const row of rows) {
    const cells = row.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
    assert.equal(cells.length, 5, row);
    assert.ok(cells[1], `type of ${cells[0]}`);
    assert.ok(cells[4], `meaning of ${cells[0]}`);
  }
});

Deno.test("docs/settings.md has one heading per config section, each setting under its own", async () => {
  const text = await renderSettingsDoc();
  const sectionOf = new Map<string, string>();
  let heading = "";
  for (const line of text.split("\n")) {
    if (line.startsWith("## ")) heading = line.slice(3);
    const name = /^\| `([^`]+)`/.exec(line)?.[1];
    if (name) sectionOf.set(name, heading);
  }
  const headings = text.split("\n").filter((l) => l.startsWith("## ")).map((l) => l.slice(3));
  assert.deepEqual(headings, [...new Set(headings)], "a section appears once");
  assert.ok(headings.length >= 10, headings.join(", "));
  // a newcomer looking for a setting finds it under the section that names its subject
  const expected: Record<string, string> = {
    "PORT / AUTHSVC_API_PORT": "Site and HTTP API",
    "DATABASE_URL / AUTHSVC_DB_DATABASE_URL": "Database",
    AUTHSVC_DB_NAMESPACE: "Database",
    AUTHSVC_JWT_EXP: "JWT",
    AUTHSVC_JWT_ALLOW_WEAK_SECRET: "JWT",
    AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID: "Sign-in methods and external providers",
    AUTHSVC_PASSWORD_MIN_LENGTH: "Passwords",
    AUTHSVC_SECURITY_CAPTCHA_SECRET: "Security",
    AUTHSVC_SESSIONS_TIMEBOX: "Sessions",
    AUTHSVC_RATE_LIMIT_EMAIL_SENT: "Rate limits",
    AUTHSVC_HOOK_SEND_EMAIL_URI: "Auth hooks",
    AUTHSVC_SMTP_HOST: "Mail",
    AUTHSVC_MAILER_SUBJECTS_INVITE: "Mail",
    AUTHSVC_SMS_TWILIO_ACCOUNT_SID: "SMS",
    AUTHSVC_MFA_MAX_ATTEMPTS: "Multi-factor authentication",
    AUTHSVC_CLEANUP_INTERVAL: "Clean-up",
    LOG_LEVEL: "Logs, traces and metrics",
    AUTHSVC_OPERATOR_TOKEN: "Inherited from GoTrue, no effect",
  };
  for (const [name, section] of Object.entries(expected)) {
    assert.equal(sectionOf.get(name), section, name);
  }
  // the contents list links every heading
  for (const h of headings) assert.ok(text.includes(`- [${h}](#`), h);
});

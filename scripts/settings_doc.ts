/**
 * Generates docs/settings.md, the table of every setting the server reads,
 * from the same code that reads them (`readConfig(...).docs`), so the table
 * cannot drift from the parser: tests/server/core/settings_doc_test.ts fails
 * when the committed file is out of date.
 *
 *   deno run -A scripts/settings_doc.ts          # rewrite docs/settings.md
 *   deno run -A scripts/settings_doc.ts --check  # exit 1 when it is out of date
 */
import { readConfig } from "../server/config.ts";

export const SETTINGS_DOC = new URL("../docs/settings.md", import.meta.url);

/** The values a config needs to be read at all; they do not change any default shown. */
const REQUIRED_ONLY = {
  AUTHSVC_SITE_URL: "http://localhost:3000",
  AUTHSVC_API_EXTERNAL_URL: "http://localhost:8081",
  AUTHSVC_JWT_SECRET: "a-secret-that-is-long-enough-0123456789",
};

/** Meanings of settings whose read in config.ts carries no `doc`. */
const MEANINGS: Record<string, string> = {
  AUTHSVC_MAILER_URLPATHS_INVITE: "path of the link in the invite mail",
  AUTHSVC_MAILER_URLPATHS_CONFIRMATION: "path of the link in the confirmation mail",
  AUTHSVC_MAILER_URLPATHS_RECOVERY: "path of the link in the recovery mail",
  AUTHSVC_MAILER_URLPATHS_EMAIL_CHANGE: "path of the link in the e-mail change mail",
  AUTHSVC_SMS_TWILIO_ACCOUNT_SID: "Twilio account SID",
  AUTHSVC_SMS_TWILIO_AUTH_TOKEN: "Twilio auth token",
  AUTHSVC_SMS_TWILIO_API_URL: "Twilio API base URL (tests, proxies)",
  AUTHSVC_SMS_MESSAGEBIRD_ACCESS_KEY: "MessageBird access key",
  AUTHSVC_SMS_MESSAGEBIRD_ORIGINATOR: "MessageBird sender",
  AUTHSVC_SMS_MESSAGEBIRD_API_URL: "MessageBird API base URL (tests, proxies)",
  AUTHSVC_SMS_TEXTLOCAL_API_KEY: "Textlocal API key",
  AUTHSVC_SMS_TEXTLOCAL_SENDER: "Textlocal sender name",
  AUTHSVC_SMS_TEXTLOCAL_API_URL: "Textlocal API base URL (tests, proxies)",
  AUTHSVC_SMS_VONAGE_API_KEY: "Vonage API key",
  AUTHSVC_SMS_VONAGE_API_SECRET: "Vonage API secret",
  AUTHSVC_SMS_VONAGE_FROM: "Vonage sender",
  AUTHSVC_SMS_VONAGE_API_URL: "Vonage API base URL (tests, proxies)",
};

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

/** The Markdown text of docs/settings.md, formatted as `deno fmt` would. */
export async function renderSettingsDoc(): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    cwd: new URL("../", import.meta.url), // deno.json's fmt options apply
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(rawSettingsDoc()));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

/** Every setting the server reads, as a Markdown table (unformatted). */
export function rawSettingsDoc(): string {
  const { docs } = readConfig(REQUIRED_ONLY);
  const lines = [
    "# Server settings",
    "",
    "Generated from `server/config.ts` by `deno run -A scripts/settings_doc.ts`; do not edit by hand.",
    "",
    "Settings come from `./.env` (or the file given with `--env-file`) and the process environment;",
    "the environment wins, whatever name either uses. Names are read with the `AUTHSVC_` prefix",
    "except `PORT`, `DATABASE_URL`,",
    "`LOG_LEVEL`, `DEBUG` and the `OTEL_*` variables. Booleans accept true/false (also 1/0, yes/no,",
    "on/off); durations accept seconds (`90`) or Go-style durations (`1m30s`); rates accept a count",
    "per the default window (`30`) or `count/duration` (`30/1h`). A missing or malformed setting",
    "stops the start with one line per problem naming the variable.",
    "",
    "GoTrue's names work too, so an existing GoTrue `.env` runs unchanged: every `AUTHSVC_<NAME>` is",
    "also read as `GOTRUE_<NAME>`, `LOG_LEVEL` as `GOTRUE_LOG_LEVEL`, and `AUTHSVC_API_EXTERNAL_URL`,",
    "`AUTHSVC_DB_NAMESPACE`, `AUTHSVC_REQUEST_ID_HEADER` also under GoTrue's unprefixed names. When both",
    "are set in one place, the `AUTHSVC_` name wins. The start-up log names every GoTrue name used or",
    "overridden.",
    "",
    "| Variable | Type | Default | Required | Meaning |",
    "|---|---|---|---|---|",
  ];
  for (const d of docs) {
    lines.push(
      `| \`${cell(d.name)}\` | ${cell(d.type)} | ${
        d.default === "" ? "" : `\`${cell(d.default)}\``
      } | ${d.required ? "yes" : ""} | ${cell(d.doc || MEANINGS[d.name] || "")} |`,
    );
  }
  lines.push("");
  return lines.join("\n");
}

if (import.meta.main) {
  const text = await renderSettingsDoc();
  if (Deno.args.includes("--check")) {
    const current = await Deno.readTextFile(SETTINGS_DOC).catch(() => "");
    if (current !== text) {
      console.error("docs/settings.md is out of date: run deno run -A scripts/settings_doc.ts");
      Deno.exit(1);
    }
  } else {
    await Deno.writeTextFile(SETTINGS_DOC, text);
    console.log(`wrote docs/settings.md`);
  }
}

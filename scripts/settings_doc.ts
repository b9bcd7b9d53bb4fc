/**
 * Generates docs/settings.md, every setting the server reads under one heading
 * per section (one file of server/config/ each), from the same code that reads
 * them (`readConfig(...).docs`), so the tables cannot drift from the parser:
 * tests/server/core/settings_doc_test.ts fails when the committed file is out
 * of date.
 *
 *   deno run -A scripts/settings_doc.ts          # rewrite docs/settings.md
 *   deno run -A scripts/settings_doc.ts --check  # exit 1 when it is out of date
 */
import { readConfig } from "../server/config/mod.ts";

export const SETTINGS_DOC = new URL("../docs/settings.md", import.meta.url);

/** The values a config needs to be read at all; they do not change any default shown. */
const REQUIRED_ONLY = {
  AUTHSVC_SITE_URL: "http://localhost:3000",
  AUTHSVC_API_EXTERNAL_URL: "http://localhost:8081",
  AUTHSVC_JWT_SECRET: "a-secret-that-is-long-enough-0123456789",
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

/** GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens. */
function anchor(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9 -]/g, "").replaceAll(" ", "-");
}

/** Every setting the server reads, one Markdown table per section (unformatted). */
export function rawSettingsDoc(): string {
  const { docs, sections } = readConfig(REQUIRED_ONLY);
  const lines = [
    "# Server settings",
    "",
    "Generated from `server/config/` by `deno run -A scripts/settings_doc.ts`; do not edit by hand.",
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
    ...sections.map((s) => `- [${s.title}](#${anchor(s.title)})`),
  ];
  for (const section of sections) {
    lines.push(
      "",
      `## ${section.title}`,
      "",
      section.about,
      "",
      "| Variable | Type | Default | Required | Meaning |",
      "|---|---|---|---|---|",
    );
    for (const d of docs.filter((d) => d.section === section.title)) {
      if (!d.doc) throw new Error(`${d.name} is read without a doc: give its read a doc`);
      lines.push(
        `| \`${cell(d.name)}\` | ${cell(d.type)} | ${
          d.default === "" ? "" : `\`${cell(d.default)}\``
        } | ${d.required ? "yes" : ""} | ${cell(d.doc)} |`,
      );
    }
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

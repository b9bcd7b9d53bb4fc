import assert from "node:assert/strict";
import { renderSettingsDoc, SETTINGS_DOC } from "../../../scripts/settings_doc.ts";

Deno.test("docs/settings.md is up to date with server/config.ts", async () => {
  const committed = await Deno.readTextFile(SETTINGS_DOC);
  const fresh = await renderSettingsDoc();
  assert.ok(
    committed === fresh,
    "docs/settings.md is out of date: run `deno run -A scripts/settings_doc.ts` and commit it",
  );
  // every setting config.ts reads is in the table, with its type and default
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

/**
 * The library is publishable: `deno publish --dry-run` of the package scripts/build_jsr.ts builds
 * passes (no slow types, documented exports), and the package's deno.json is the library's alone.
 */
import assert from "node:assert/strict";
import { buildJsr, publishJsr } from "../../scripts/build_jsr.ts";
import { EXPORTS, NAME } from "../../scripts/package.ts";

Deno.test("deno publish --dry-run succeeds", async () => {
  const out = await publishJsr(true);
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.match(text, /Success Dry run complete/);
  assert.doesNotMatch(text, /warning/i, "no slow-types (or other) warning");
  assert.match(text, /client\/strategy\/auth_code\.ts/);
  assert.match(text, /\/LICENSE \(/);
  assert.doesNotMatch(text, /tests\/|server\/|scripts\//, "only the library is published");
  // The package carries the client-only README; the repository's README (the server) stays out.
  assert.match(text, /client\/README\.md/);
  assert.doesNotMatch(
    text,
    /oauth2-jsr-[^/]+\/README\.md/,
    "the repository's README.md is not published",
  );
});

Deno.test("the published deno.json holds the package's fields, no server or test configuration", async () => {
  const dir = await Deno.makeTempDir({ prefix: "oauth2-jsr-test-" });
  try {
    await buildJsr(dir);
    const published = JSON.parse(await Deno.readTextFile(`${dir}/deno.json`));
    const repo = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
    assert.deepEqual(Object.keys(published).sort(), ["exports", "license", "name", "version"]);
    assert.equal(published.name, NAME);
    assert.equal(published.version, repo.version, "the version is deno.json's");
    assert.deepEqual(published.exports, EXPORTS);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every export of mod.ts and oidc.ts has JSDoc (deno doc --lint)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", "mod.ts", "oidc.ts"],
    cwd: new URL("../..", import.meta.url).pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
});

Deno.test("every export of mod.ts and oidc.ts has an @example, and the examples type-check", async () => {
  const root = new URL("../..", import.meta.url).pathname;
  const doc = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", "mod.ts"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(doc.code, 0, new TextDecoder().decode(doc.stderr));
  type Tag = { kind: string };
  type DocSymbol = { name: string; declarations: { jsDoc?: { tags?: Tag[] } }[] };
  const json = JSON.parse(new TextDecoder().decode(doc.stdout));
  const symbols: DocSymbol[] = json.nodes[new URL("mod.ts", `file://${root}`).href].symbols;
  const withoutExample = (list: DocSymbol[]) =>
    list
      .filter((s) => !s.declarations.some((d) => d.jsDoc?.tags?.some((t) => t.kind === "example")))
      .map((s) => s.name);
  assert.ok(symbols.length >= 40, `mod.ts exports ${symbols.length} symbols`);
  assert.deepEqual(withoutExample(symbols), []);
  const oidcDoc = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", "oidc.ts"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(oidcDoc.code, 0, new TextDecoder().decode(oidcDoc.stderr));
  const oidcJson = JSON.parse(new TextDecoder().decode(oidcDoc.stdout));
  const oidcSymbols: DocSymbol[] =
    oidcJson.nodes[new URL("oidc.ts", `file://${root}`).href].symbols;
  assert.ok(oidcSymbols.length >= 30, `oidc.ts exports ${oidcSymbols.length} symbols`);
  assert.deepEqual(withoutExample(oidcSymbols), []);

  const check = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--doc", "mod.ts", "oidc.ts", "client/"],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(check.code, 0, new TextDecoder().decode(check.stderr));
});

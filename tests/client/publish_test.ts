/** The library is publishable: `deno publish --dry-run` passes (no slow types, documented exports). */
import assert from "node:assert/strict";

Deno.test("deno publish --dry-run succeeds", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: new URL("../..", import.meta.url).pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.match(text, /Success Dry run complete/);
  assert.match(text, /client\/strategy\/auth_code\.ts/);
  assert.doesNotMatch(text, /tests\//, "tests are not published");
});

Deno.test("every export of mod.ts has JSDoc (deno doc --lint)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", "mod.ts"],
    cwd: new URL("../..", import.meta.url).pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
});

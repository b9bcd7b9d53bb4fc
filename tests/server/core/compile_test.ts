/** `deno task compile`: a binary where the runtime can be fetched, a clear refusal where not. */
import assert from "node:assert/strict";
import { isRuntimeDownloadFailure } from "../../../scripts/compile.ts";
import { VERSION } from "../../../server/version.ts";

Deno.test("compile builds a working binary, or says plainly that the runtime cannot be downloaded", async () => {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-compile-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "scripts/compile.ts", "--output", `${dir}/authsvc`],
      cwd: new URL("../../../", import.meta.url),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    if (out.code === 0) {
      const v = await new Deno.Command(`${dir}/authsvc`, { args: ["version"], stdout: "piped" })
        .output();
      assert.equal(new TextDecoder().decode(v.stdout).trim(), VERSION);
    } else {
      assert.equal(out.code, 1, stderr);
      assert.match(stderr, /cannot build the binary on this machine/);
      assert.match(stderr, /download/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the download failure is told apart from other compile errors", () => {
  assert.ok(isRuntimeDownloadFailure(
    "error: Writing deno compile executable\nCaused by:\n 0: Setting up base binary.\n" +
      " 1: error sending request for url (https://dl.deno.land/release/v2.9.6/denort-x86_64.zip)",
  ));
  assert.ok(!isRuntimeDownloadFailure('error: Module not found "file:///x/server/main.ts"'));
});

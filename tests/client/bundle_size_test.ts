/**
 * The core stays small: the npm package's `mod.js` (scripts/build_npm.ts),
 * bundled and minified (`deno bundle --minify`), is under 15 kB gzipped.
 * OpenID Connect, DPoP and the device grant live in the `./oidc` entry and
 * are not part of it. The figures are printed for docs/client.md.
 */
import assert from "node:assert/strict";
import { buildNpm } from "../../scripts/build_npm.ts";

async function gzipSize(path: string): Promise<number> {
  const stream = (await Deno.open(path)).readable.pipeThrough(new CompressionStream("gzip"));
  return (await new Response(stream).arrayBuffer()).byteLength;
}

async function bundle(entry: string, out: string): Promise<void> {
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--minify", "--quiet", entry, "-o", out],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
}

Deno.test("the core bundle (mod.js) is under 15 kB gzipped; oidc is a separate entry", async () => {
  const dir = await Deno.makeTempDir({ prefix: "oauth2-size-" });
  try {
    await buildNpm(`${dir}/pkg`);
    await bundle(`${dir}/pkg/mod.js`, `${dir}/core.js`);
    await bundle(`${dir}/pkg/oidc.js`, `${dir}/oidc.js`);
    const core = await gzipSize(`${dir}/core.js`);
    const oidc = await gzipSize(`${dir}/oidc.js`);
    console.log(
      `core mod.js: ${core} B gzipped; oidc.js entry (with the core parts it uses): ${oidc} B`,
    );
    assert.ok(core < 15_000, `core bundle ${core} B gzipped`);
    const text = await Deno.readTextFile(`${dir}/core.js`);
    for (
      const name of ["dpop+jwt", "use_dpop_nonce", "grant-type:device_code", "invalid_id_token"]
    ) {
      assert.ok(!text.includes(name), `${name} is not in the core bundle`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

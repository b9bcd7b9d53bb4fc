/**
 * How much of the library an application ships, measured as bundlers do:
 * esbuild bundles, tree-shakes and minifies an entry that imports from
 * `mod.ts` / `oidc.ts`, and the result is gzipped. Three entries: the whole
 * core (every export of mod.ts), an application using authorization code +
 * PKCE + refresh, and the oidc entry. The figures are printed for
 * docs/client.md; the test fails when the core reaches its budget or when
 * tree-shaking stops removing anything.
 */
import assert from "node:assert/strict";
import * as esbuild from "esbuild";

const root = new URL("../..", import.meta.url).pathname;

/** Bundled, tree-shaken, minified and gzipped size of `entry` (TypeScript source). */
async function gzippedBundle(entry: string): Promise<{ min: number; gzip: number; text: string }> {
  const result = await esbuild.build({
    stdin: { contents: entry, loader: "ts", resolveDir: root, sourcefile: "entry.ts" },
    bundle: true,
    minify: true,
    treeShaking: true,
    format: "esm",
    platform: "neutral",
    write: false,
    logLevel: "silent",
  });
  const bytes = result.outputFiles[0].contents;
  const gz = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  return {
    min: bytes.byteLength,
    gzip: (await new Response(gz).arrayBuffer()).byteLength,
    text: new TextDecoder().decode(bytes),
  };
}

const AUTH_CODE_APP = `
import { Client, generatePkce } from "./mod.ts";
export async function login(code: string) {
  const client = new Client("app", "secret", { site: "https://id.example.com", redirectUri: "https://app.example.com/cb" });
  const pkce = await generatePkce();
  const url = client.authCode.authorizeUrl({ scope: "openid", state: "s", code_challenge: pkce.codeChallenge, code_challenge_method: "S256" });
  const token = await client.authCode.getToken(code, { code_verifier: pkce.codeVerifier });
  return [url, await token.refresh()];
}
`;

Deno.test("bundle sizes (esbuild, tree-shaken, minified, gzipped)", async () => {
  try {
    const core = await gzippedBundle(`export * from "./mod.ts";`);
    const authCode = await gzippedBundle(AUTH_CODE_APP);
    const oidc = await gzippedBundle(`export * from "./oidc.ts";`);
    console.log(
      `core (all of mod.ts): ${core.gzip} B gzipped (${core.min} B minified); ` +
        `auth code + PKCE + refresh: ${authCode.gzip} B; oidc entry with the core it uses: ${oidc.gzip} B`,
    );
    assert.ok(core.gzip < 15_000, `core bundle ${core.gzip} B gzipped`);
    assert.ok(authCode.min < core.min, "tree-shaking removes what an auth-code app does not use");
    for (
      const name of ["dpop+jwt", "use_dpop_nonce", "grant-type:device_code", "invalid_id_token"]
    ) {
      assert.ok(!core.text.includes(name), `${name} is not in the core bundle`);
    }
  } finally {
    await esbuild.stop();
  }
});

/**
 * How much of the library an application ships, measured as bundlers do:
 * esbuild bundles, tree-shakes and minifies an entry that imports from
 * `mod.ts` / `oidc.ts`, and the result is gzipped. What the library loads
 * only when a program uses it (`import()`: the error classes and redaction
 * when a request fails, redirects, the debug log, the JWT signer of
 * `private_key_jwt`, discovery, Deno's HTTP client) is left out of a
 * program's bundle and measured on its own, as a code-splitting bundler
 * ships it.
 *
 * Targets (issue 45): authorization code + PKCE + refresh at most 7 kB, the
 * whole core (every export of mod.ts) at most 14 kB. The 7 kB program is the
 * one written for the smallest bundle (`BaseClient.requestToken`, which
 * docs/client.md, "Size", names for it); the same program through `Client`
 * (`client.authCode`, `AccessToken.refresh`) carries the gem's object model
 * (`AccessToken` with its synchronous `response`, inspection and errors) and
 * is held to its own bound, so that it does not grow unnoticed. Both
 * programs are run from their bundles alone against a token endpoint: they
 * complete, so nothing they need was left out of the figures.
 */
import assert from "node:assert/strict";
import * as esbuild from "esbuild";
import { json, startStub } from "./_stub.ts";

const root = new URL("../..", import.meta.url).pathname;
const KB = 1024;

interface Bundle {
  /** Minified bytes. */
  min: number;
  /** Gzipped bytes. */
  gzip: number;
  /** The minified text. */
  text: string;
  /** The modules the bundle loads with `import()` (left out). */
  lazy: string[];
}

async function gzip(bytes: Uint8Array): Promise<number> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new CompressionStream("gzip"));
  return (await new Response(stream).arrayBuffer()).byteLength;
}

/**
 * Bundles `entry` (TypeScript source in the repository's root): tree-shaken,
 * minified, gzipped. With `lazy: "out"` the modules loaded by `import()` stay
 * out (as with code splitting); with `"in"` they are bundled in.
 */
async function bundle(entry: string, lazy: "out" | "in"): Promise<Bundle> {
  const imported = new Set<string>();
  const result = await esbuild.build({
    stdin: { contents: entry, loader: "ts", resolveDir: root, sourcefile: "entry.ts" },
    bundle: true,
    minify: true,
    treeShaking: true,
    format: "esm",
    platform: "neutral",
    write: false,
    logLevel: "silent",
    plugins: lazy === "in" ? [] : [{
      name: "lazy-out",
      setup(build) {
        build.onResolve({ filter: /.*/ }, (args) => {
          if (args.kind !== "dynamic-import") return undefined;
          imported.add(args.path.replace(/^.*\//, ""));
          return { path: args.path, external: true };
        });
      },
    }],
  });
  const bytes = result.outputFiles[0].contents;
  return {
    min: bytes.byteLength,
    gzip: await gzip(bytes),
    text: new TextDecoder().decode(bytes),
    lazy: [...imported].sort(),
  };
}

/** Authorization code + PKCE + refresh, written for the smallest bundle (`BaseClient`). */
const AUTH_CODE_APP = `
import { BaseClient, generatePkce } from "./mod.ts";
export async function login(site: string, code: string) {
  const client = new BaseClient("app", "secret", { site, redirectUri: "https://app.example.com/cb" });
  const pkce = await generatePkce();
  const url = client.authorizeUrl({ response_type: "code", client_id: client.id, scope: "openid",
    state: "s", code_challenge: pkce.codeChallenge, code_challenge_method: "S256" });
  const tokens = await client.requestToken({ grant_type: "authorization_code", code, code_verifier: pkce.codeVerifier });
  const fresh = await client.requestToken({ grant_type: "refresh_token", refresh_token: tokens.refresh_token });
  return { url, tokens, fresh };
}
`;

/** The same program with the Ruby gem's object model (`Client`, `AccessToken`). */
const AUTH_CODE_CLIENT_APP = `
import { Client, generatePkce } from "./mod.ts";
export async function login(site: string, code: string) {
  const client = new Client("app", "secret", { site, redirectUri: "https://app.example.com/cb" });
  const pkce = await generatePkce();
  const url = client.authCode.authorizeUrl({ scope: "openid", state: "s", code_challenge: pkce.codeChallenge, code_challenge_method: "S256" });
  const token = await client.authCode.getToken(code, { code_verifier: pkce.codeVerifier });
  const fresh = await token.refresh();
  return { url, tokens: { access_token: token.token }, fresh: { access_token: fresh.token } };
}
`;

Deno.test("bundle sizes (esbuild, tree-shaken, minified, gzipped) hold the targets", async () => {
  try {
    const app = await bundle(AUTH_CODE_APP, "out");
    const clientApp = await bundle(AUTH_CODE_CLIENT_APP, "out");
    const core = await bundle(`export * from "./mod.ts";`, "out");
    const coreWhole = await bundle(`export * from "./mod.ts";`, "in");
    const oidc = await bundle(`export * from "./oidc.ts";`, "out");
    console.log(
      `auth code + PKCE + refresh (BaseClient): ${app.gzip} B; the same with Client and ` +
        `AccessToken: ${clientApp.gzip} B; core (all of mod.ts): ${core.gzip} B loaded up front ` +
        `(${core.min} B minified), ${coreWhole.gzip} B with the parts it loads on demand bundled ` +
        `in; oidc entry with the core it uses: ${oidc.gzip} B. Loaded on demand: ${
          core.lazy.join(", ")
        }`,
    );
    assert.ok(
      app.gzip <= 7 * KB,
      `auth code + PKCE + refresh: ${app.gzip} B gzipped (target 7 kB)`,
    );
    assert.ok(core.gzip <= 14 * KB, `core: ${core.gzip} B gzipped (target 14 kB)`);
    // Bounds of the figures without a target of their own: no unnoticed growth.
    assert.ok(
      clientApp.gzip <= 12.5 * KB,
      `auth code + PKCE + refresh with Client: ${clientApp.gzip} B gzipped (bound 12.5 kB)`,
    );
    assert.ok(
      coreWhole.gzip <= 16 * KB,
      `core in one bundle: ${coreWhole.gzip} B gzipped (bound 16 kB)`,
    );
    assert.ok(app.gzip < clientApp.gzip && clientApp.gzip < core.gzip, "tree-shaking removes code");
    for (
      const name of ["dpop+jwt", "use_dpop_nonce", "grant-type:device_code", "invalid_id_token"]
    ) {
      assert.ok(!coreWhole.text.includes(name), `${name} (oidc entry) is not in the core`);
    }
    // What the program loads when it needs it, not before: a request that fails, a redirect,
    // the debug log, private_key_jwt.
    for (const lazy of ["error.ts", "redirect.ts", "debug_log.ts", "client_assertion.ts"]) {
      assert.ok(app.text.includes(`import("./${lazy}")`), `${lazy} is loaded on demand`);
    }
    assert.ok(
      !app.text.includes("SnakyHash"),
      "no SnakyHash in a program that reads no parsed body",
    );
  } finally {
    await esbuild.stop();
  }
});

for (
  const [name, program] of [["BaseClient", AUTH_CODE_APP], ["Client", AUTH_CODE_CLIENT_APP]]
) {
  Deno.test(`the auth-code program with ${name} runs from its measured bundle alone`, async () => {
    let app: Bundle;
    try {
      app = await bundle(program, "out");
    } finally {
      await esbuild.stop();
    }
    await runAlone(app);
  });
}

/** Runs the `login` of `app`'s bundle, written alone to a directory, against a token endpoint. */
async function runAlone(app: Bundle): Promise<void> {
  // Only the bundle is written: a module it left for `import()` is not there to be loaded.
  const dir = await Deno.makeTempDir({ prefix: "oauth2-bundle-" });
  try {
    const file = `${dir}/app.mjs`;
    await Deno.writeTextFile(file, app.text);
    const grants: string[] = [];
    await using stub = startStub((req) => {
      grants.push(req.form.get("grant_type")!);
      if (req.headers.get("authorization") !== `Basic ${btoa("app:secret")}`) {
        return json({ error: "invalid_client" }, 401);
      }
      return req.form.get("grant_type") === "authorization_code"
        ? req.form.get("code") === "the-code" && req.form.get("code_verifier")?.length === 43
          ? json({
            access_token: "at-1",
            token_type: "Bearer",
            expires_in: 600,
            refresh_token: "rt-1",
          })
          : json({ error: "invalid_grant" }, 400)
        : req.form.get("refresh_token") === "rt-1"
        ? json({ access_token: "at-2", token_type: "Bearer", expires_in: 600 })
        : json({ error: "invalid_grant" }, 400);
    });
    const { login } = await import(new URL(`file://${file}`).href);
    const { url, tokens, fresh } = await login(stub.url, "the-code");
    assert.match(url, /response_type=code&client_id=app&scope=openid&.*code_challenge_method=S256/);
    assert.match(url, /redirect_uri=https%3A%2F%2Fapp\.example\.com%2Fcb/);
    assert.equal(tokens.access_token, "at-1");
    assert.equal(fresh.access_token, "at-2");
    assert.deepEqual(grants, ["authorization_code", "refresh_token"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * The npm build of the library: Node 20 imports it by package name (through
 * package.json "exports") and completes a client-credentials grant against a
 * local token endpoint; its .d.ts files type-check a consumer.
 */
import assert from "node:assert/strict";
import ts from "typescript";
import { buildNpm } from "../../scripts/build_npm.ts";
import { json, startStub } from "./_stub.ts";

Deno.test("npm package: Node 20 runs a client-credentials grant; the types check", async () => {
  const dir = await Deno.makeTempDir({ prefix: "oauth2-npm-test-" });
  try {
    const pkgDir = `${dir}/node_modules/@authsvc/oauth2`;
    const files = await buildNpm(pkgDir);
    for (
      const f of [
        "package.json",
        "mod.js",
        "mod.d.ts",
        "client/client.js",
        "client/strategy/assertion.d.ts",
      ]
    ) {
      assert.ok(files.includes(f), `${f} is in the package`);
    }
    const pkg = JSON.parse(await Deno.readTextFile(`${pkgDir}/package.json`));
    assert.equal(pkg.type, "module");
    assert.deepEqual(pkg.exports["."], {
      types: "./mod.d.ts",
      import: "./mod.js",
      default: "./mod.js",
    });

    await using stub = startStub((req) =>
      req.headers.get("authorization") === `Basic ${btoa("node-app:n0de-Secret-value")}` &&
        req.form.get("grant_type") === "client_credentials"
        ? json({
          access_token: "node-token",
          token_type: "Bearer",
          expires_in: "600",
          scope: req.form.get("scope"),
        })
        : json({ error: "invalid_client" }, 401)
    );
    await Deno.writeTextFile(
      `${dir}/consumer.mjs`,
      `import { Client, VERSION } from "@authsvc/oauth2";
       import { inspect } from "node:util";
       const client = new Client("node-app", "n0de-Secret-value", { site: process.argv[2] });
       const token = await client.clientCredentials.getToken({ scope: "api:read" });
       console.log(JSON.stringify({
         version: VERSION,
         node: process.versions.node,
         token: token.token,
         scope: token.params.scope,
         expired: token.expired(),
         inspected: inspect(token) + inspect(client),
       }));`,
    );
    const out = await new Deno.Command("node", {
      args: [`${dir}/consumer.mjs`, stub.url],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    const result = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(result.token, "node-token");
    assert.equal(result.scope, "api:read");
    assert.equal(result.expired, false);
    assert.ok(Number(result.node.split(".")[0]) >= 20);
    assert.ok(!result.inspected.includes("node-token"), "util.inspect shows no token");
    assert.ok(!result.inspected.includes("n0de-Secret-value"), "util.inspect shows no secret");
    assert.match(result.inspected, /\[FILTERED\]/);

    await Deno.writeTextFile(
      `${dir}/consumer.ts`,
      `import { Client, type AccessToken, OAuthError } from "@authsvc/oauth2";
       const c = new Client("a", "b", { site: "https://x", authScheme: "request_body" });
       export const t: Promise<AccessToken> = c.clientCredentials.getToken({ scope: "s" });
       export const e: typeof OAuthError = OAuthError;
       // @ts-expect-error an unknown auth scheme is a type error for consumers
       new Client("a", "b", { authScheme: "magic" });`,
    );
    const program = ts.createProgram({
      rootNames: [`${dir}/consumer.ts`],
      options: {
        noEmit: true,
        strict: true,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
        types: [],
      },
    });
    const diagnostics = ts.getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    assert.deepEqual(diagnostics, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The npm build of the library: Node 20 imports it by package name (through
 * package.json "exports") and completes a client-credentials grant against a
 * local token endpoint, signs JWT assertions (ES256, EdDSA, PS256) with Node's
 * WebCrypto that jose verifies; its .d.ts files type-check a consumer.
 */
import assert from "node:assert/strict";
import ts from "typescript";
import { buildNpm } from "../../scripts/build_npm.ts";
import { BUGS, HOMEPAGE, REPOSITORY } from "../../scripts/package.ts";
import * as jose from "jose";
import { json, startStub } from "./_stub.ts";

async function pkcs8Pem(alg: string): Promise<{ pem: string; publicKey: CryptoKey }> {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
  return {
    pem: await jose.exportPKCS8(privateKey as CryptoKey),
    publicKey: publicKey as CryptoKey,
  };
}

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
    const readme = await Deno.readTextFile(`${pkgDir}/README.md`);
    assert.match(readme, /^# @authsvc\/oauth2/, "the package's README is the client's");
    assert.doesNotMatch(readme, /AUTHSVC_|deno task start/, "no server documentation in it");
    const pkg = JSON.parse(await Deno.readTextFile(`${pkgDir}/package.json`));
    assert.equal(pkg.type, "module");
    assert.deepEqual(pkg.exports["."], {
      types: "./mod.d.ts",
      import: "./mod.js",
      default: "./mod.js",
    });
    // npm's page of the package links the source, the documentation and the issue tracker.
    assert.equal(pkg.repository.url, `git+${REPOSITORY}.git`);
    assert.equal(pkg.repository.directory, "client");
    assert.equal(pkg.homepage, HOMEPAGE);
    assert.equal(pkg.bugs.url, BUGS);

    const assertions: string[] = [];
    await using stub = startStub((req) => {
      if (req.form.get("grant_type") === "urn:ietf:params:oauth:grant-type:jwt-bearer") {
        assertions.push(req.form.get("assertion")!);
        return json({ access_token: `assertion-${assertions.length}` });
      }
      return req.headers.get("authorization") === `Basic ${btoa("node-app:n0de-Secret-value")}` &&
          req.form.get("grant_type") === "client_credentials"
        ? json({
          access_token: "node-token",
          token_type: "Bearer",
          expires_in: "600",
          scope: req.form.get("scope"),
        })
        : json({ error: "invalid_client" }, 401);
    });
    const keys = {
      ES256: await pkcs8Pem("ES256"),
      EdDSA: await pkcs8Pem("EdDSA"),
      PS256: await pkcs8Pem("PS256"),
    };
    await Deno.writeTextFile(
      `${dir}/keys.json`,
      JSON.stringify(Object.fromEntries(Object.entries(keys).map(([alg, k]) => [alg, k.pem]))),
    );
    await Deno.writeTextFile(
      `${dir}/consumer.mjs`,
      `import { Client, VERSION } from "@authsvc/oauth2";
       import { inspect } from "node:util";
       import { readFileSync } from "node:fs";
       const client = new Client("node-app", "n0de-Secret-value", { site: process.argv[2] });
       const token = await client.clientCredentials.getToken({ scope: "api:read" });
       const keys = JSON.parse(readFileSync(new URL("./keys.json", import.meta.url), "utf8"));
       const signed = [];
       for (const [algorithm, key] of Object.entries(keys)) {
         const t = await client.assertion.getToken({ iss: "node", aud: "x", exp: 2000000000 }, { algorithm, key });
         signed.push(t.token);
       }
       console.log(JSON.stringify({
         signed,
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
    assert.deepEqual(result.signed, ["assertion-1", "assertion-2", "assertion-3"]);
    for (const [i, [alg, key]] of Object.entries(keys).entries()) {
      const { payload, protectedHeader } = await jose.jwtVerify(assertions[i], key.publicKey);
      assert.equal(protectedHeader.alg, alg, "signed by Node's WebCrypto, verified by jose");
      assert.equal(payload.iss, "node");
    }

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

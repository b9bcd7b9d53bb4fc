/**
 * What a first `deno task start` downloads is the server's alone: deno.json's `imports` are the
 * server's npm dependencies (the tests', bench's and scripts' live in its `scopes`), and deno.lock,
 * which `deno task` installs in full before anything runs, is exactly their part of deno.dev.lock
 * (scripts/lock.ts). `deno info` of server/main.ts under deno.json's frozen deno.lock is
 * tests/server/core/lazy_imports_test.ts.
 */
import assert from "node:assert/strict";
import { expectedServerLock, LOCK_COMMAND, SERVER_LOCK } from "../../../scripts/lock.ts";

const ROOT = new URL("../../../", import.meta.url);
const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))) as {
  imports: Record<string, string>;
  scopes: Record<string, Record<string, string>>;
  lock: { path: string; frozen: boolean };
};

/** The TypeScript files of the server and the library, with the modules they import. */
async function serverSources(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: URL) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(new URL(`${e.name}/`, dir));
      else if (e.name.endsWith(".ts")) out.push(await Deno.readTextFile(new URL(e.name, dir)));
    }
  };
  await walk(new URL("server/", ROOT));
  await walk(new URL("client/", ROOT));
  for (const f of ["deps.ts", "mod.ts", "oidc.ts"]) {
    out.push(await Deno.readTextFile(new URL(f, ROOT)));
  }
  return out;
}

Deno.test("deno.lock is the server's part of deno.dev.lock, and deno.json freezes it", async () => {
  assert.deepEqual(config.lock, { path: "deno.lock", frozen: true });
  const have = await Deno.readTextFile(SERVER_LOCK);
  assert.ok(
    have === await expectedServerLock(),
    `deno.lock is out of date: run \`${LOCK_COMMAND}\``,
  );
});

Deno.test("every npm import of deno.json is the server's; nothing else is", async () => {
  const sources = (await serverSources()).join("\n");
  const unused = Object.entries(config.imports)
    .filter(([, target]) => target.startsWith("npm:"))
    .map(([name]) => name.replace(/\/$/, ""))
    .filter((name) =>
      !new RegExp(`["']${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}["'/]`).test(sources)
    );
  assert.deepEqual(unused, [], "imports the server does not use belong in a scope of deno.json");
});

Deno.test("a package named in several scopes has one version range", () => {
  const seen = new Map<string, string>();
  for (const [scope, imports] of Object.entries(config.scopes)) {
    for (const [name, target] of Object.entries(imports)) {
      const other = seen.get(name) ?? config.imports[name];
      assert.ok(!other || other === target, `${name}: ${target} in ${scope}, ${other} elsewhere`);
      seen.set(name, target);
    }
  }
});

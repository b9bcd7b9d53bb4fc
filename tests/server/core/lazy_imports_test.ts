/**
 * A server start loads only the packages every start needs: the database
 * driver, nodemailer, the OpenTelemetry SDK and exporters and the QR encoder
 * are imported with a dynamic `import()` where they are used (deps.ts), so
 * one that the configuration does not use is never loaded. Read from the
 * module graph `deno info` reports for server/main.ts, following static
 * imports only.
 */
import assert from "node:assert/strict";

interface InfoModule {
  specifier: string;
  kind?: string;
  npmPackage?: string;
  dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
}

async function staticNpmPackages(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: new URL("../../../", import.meta.url),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
    redirects: Record<string, string>;
  };
  const resolve = (s: string) => {
    while (info.redirects[s]) s = info.redirects[s];
    return s;
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const packages = new Set<string>();
  const todo = [resolve(info.roots[0])];
  while (todo.length) {
    const s = todo.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    const m = bySpecifier.get(s);
    if (!m) continue;
    if (m.kind === "npm") {
      // "@scope/name@1.2.3_peer@4" -> "@scope/name"
      packages.add((m.npmPackage ?? s).replace(/^npm:\/?/, "").replace(/(.)@.*$/, "$1"));
      continue;
    }
    for (const d of m.dependencies ?? []) {
      if (!d.isDynamic && d.code) todo.push(resolve(d.code.specifier));
    }
  }
  return [...packages].sort();
}

Deno.test("server/main.ts loads drivers, mailer, telemetry SDK and QR encoder only when used", async () => {
  const loaded = await staticNpmPackages("server/main.ts");
  assert.deepEqual(loaded, ["@opentelemetry/api", "dotenv", "hono", "jose"]);
});

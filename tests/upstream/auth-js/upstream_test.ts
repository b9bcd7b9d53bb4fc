/**
 * Runs the vendored upstream auth-js integration tests (vendor/test/, see README.md) against our
 * server: the instances of instances.ts, the published @supabase/auth-js of deno.json, and the
 * Jest adapter of jest.ts. One Deno test per upstream test, named `<file> > <describe> > <test>`.
 *
 * EXPECTED.md lists the upstream tests that fail here, each with its reason. A listed test must
 * fail and an unlisted one must pass: a listed test that passes fails the run (remove it from the
 * list), and so does a listed name that no longer exists. The last test prints the counts.
 */
import { collect, provide, runTest, type TestCase } from "./jest.ts";
import { closeInstances, startInstances } from "./instances.ts";

/** The upstream test files run here, in upstream's --runInBand order (alphabetical). */
const FILES = [
  "GoTrueApi.test.ts",
  "GoTrueClient.pkce.test.ts",
  "GoTrueClient.signOut.test.ts",
  "GoTrueClient.test.ts",
  "docker-tests/anonymous-disabled.test.ts",
  "docker-tests/asymmetric-jwt.test.ts",
  "docker-tests/phone-otp.test.ts",
  "docker-tests/signup-disabled.test.ts",
];

/** A bound for a hung upstream call, not a speed expectation (Jest's default is 5 s). */
const TEST_TIMEOUT_MS = 30_000;

const KINDS = ["out-of-scope", "difference", "not-runnable", "client-version"] as const;
type Kind = typeof KINDS[number];
interface Entry {
  kind: Kind;
  /** Marked `kind?`: fails only when the test's random input collides; a pass is tolerated. */
  mayPass: boolean;
  reason: string;
  seen: boolean;
}

/** Reads the table rows of EXPECTED.md: | file > describe > test | kind | reason |. */
function readExpected(): Map<string, Entry> {
  const text = Deno.readTextFileSync(new URL("./EXPECTED.md", import.meta.url));
  const out = new Map<string, Entry>();
  for (const line of text.split("\n")) {
    const m = /^\|\s*`(.+)`\s*\|\s*([a-z-]+)(\??)\s*\|\s*(.+?)\s*\|\s*$/.exec(line);
    if (!m) continue;
    if (!KINDS.includes(m[2] as Kind)) throw new Error(`EXPECTED.md: unknown kind ${m[2]}`);
    if (out.has(m[1])) throw new Error(`EXPECTED.md lists ${m[1]} twice`);
    out.set(m[1], { kind: m[2] as Kind, mayPass: m[3] === "?", reason: m[4], seen: false });
  }
  return out;
}

const expected = readExpected();
const counts: Record<Kind | "passed" | "skipped" | "unexpected", number> = {
  passed: 0,
  "out-of-scope": 0,
  difference: 0,
  "not-runnable": 0,
  "client-version": 0,
  skipped: 0,
  unexpected: 0,
};
const ignore = (t: TestCase) => t.skip;

await startInstances();

// GoTrueClient.test.ts calls require('./lib/clients') inside some tests.
provide(
  "./lib/clients",
  await import(new URL("./vendor/test/lib/clients.ts", import.meta.url).href),
);

const all: { file: string; test: TestCase; name: string }[] = [];
for (const file of FILES) {
  const href = new URL(`./vendor/test/${file}`, import.meta.url).href;
  const tests = await collect(file, () => import(href));
  for (const test of tests) all.push({ file, test, name: `${file} > ${test.name}` });
}

for (const { test, name } of all) {
  const entry = expected.get(name);
  if (entry) entry.seen = true;
  Deno.test({
    name,
    ignore: ignore(test),
    sanitizeOps: false,
    sanitizeResources: false,
    sanitizeExit: false,
    async fn() {
      let error: unknown;
      try {
        await runTest(test, TEST_TIMEOUT_MS);
      } catch (e) {
        error = e;
      }
      if (!entry) {
        if (error) {
          counts.unexpected++;
          throw error;
        }
        counts.passed++;
        return;
      }
      if (!error && entry.mayPass) {
        // Counted as listed, so the counts stay the same from run to run.
        console.log(`passed this time (its random input did not collide): ${name}`);
        counts[entry.kind]++;
        return;
      }
      if (!error) {
        counts.unexpected++;
        throw new Error(
          `listed in EXPECTED.md as ${entry.kind} (${entry.reason}) but passed: remove it there`,
        );
      }
      counts[entry.kind]++;
    },
  });
}

Deno.test({
  name: "upstream auth-js: counts, and EXPECTED.md names only existing tests",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await closeInstances();
    counts.skipped = all.filter((t) => ignore(t.test)).length;
    console.log(
      `upstream auth-js: ${all.length} tests: ${counts.passed} passed, ` +
        `${counts["out-of-scope"]} out of scope, ${counts.difference} known differences, ` +
        `${counts["not-runnable"]} not runnable outside Jest, ` +
        `${counts["client-version"]} for an older auth-js, ${counts.skipped} skipped upstream, ` +
        `${counts.unexpected} unexpected`,
    );
    const stale = [...expected].filter(([, e]) => !e.seen).map(([n]) => n);
    if (stale.length) {
      throw new Error(`EXPECTED.md names tests that do not exist:\n${stale.join("\n")}`);
    }
    // The counts in the README and docs/upstream.md, when every test ran (no --filter) as listed.
    const ran = all.length - counts.skipped;
    const finished = counts.passed + counts.unexpected +
      KINDS.reduce((n, k) => n + counts[k], 0);
    if (finished === ran && counts.unexpected === 0) checkCountsDocs(countsBlock(all.length));
  },
});

/** The counts as the docs show them. */
function countsBlock(total: number): string {
  return [
    `- upstream tests: ${total}`,
    `- passed: ${counts.passed}`,
    `- out of scope (features this server does not have): ${counts["out-of-scope"]}`,
    `- known differences: ${counts.difference}`,
    `- not runnable outside Jest: ${counts["not-runnable"]}`,
    `- written for an older auth-js: ${counts["client-version"]}`,
    `- skipped upstream: ${counts.skipped}`,
  ].join("\n");
}

const COUNTS_START = "<!-- upstream auth-js counts: upstream_test.ts checks this list -->";
const COUNTS_END = "<!-- end of counts -->";

/** Checks (or with UPDATE_UPSTREAM=1 rewrites) the counts table of each document. */
function checkCountsDocs(block: string): void {
  const docs = [
    new URL("./README.md", import.meta.url),
    new URL("../../../docs/upstream.md", import.meta.url),
    // Copied from docs/upstream.md by tests/conformance/compat_test.ts; the README keeps its own.
    new URL("../../../docs/compat.md", import.meta.url),
    new URL("../../../README.md", import.meta.url),
  ];
  for (const doc of docs) {
    const text = Deno.readTextFileSync(doc);
    const a = text.indexOf(COUNTS_START);
    const b = text.indexOf(COUNTS_END);
    if (a < 0 || b < a) throw new Error(`${doc.pathname}: no counts markers`);
    const want = `${text.slice(0, a + COUNTS_START.length)}\n\n${block}\n\n${text.slice(b)}`;
    if (want === text) continue;
    if (Deno.env.get("UPDATE_UPSTREAM") === "1") Deno.writeTextFileSync(doc, want);
    else {
      throw new Error(
        `${doc.pathname}: the counts differ from this run:\n${block}\n` +
          "(UPDATE_UPSTREAM=1 deno test -A tests/upstream/ rewrites them)",
      );
    }
  }
}

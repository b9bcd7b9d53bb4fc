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

type Kind = "difference" | "not-runnable";
interface Entry {
  kind: Kind;
  reason: string;
  seen: boolean;
}

/** Reads the table rows of EXPECTED.md: | file > describe > test | kind | reason |. */
function readExpected(): Map<string, Entry> {
  const text = Deno.readTextFileSync(new URL("./EXPECTED.md", import.meta.url));
  const out = new Map<string, Entry>();
  for (const line of text.split("\n")) {
    const m = /^\|\s*`(.+)`\s*\|\s*(difference|not-runnable)\s*\|\s*(.+?)\s*\|\s*$/.exec(line);
    if (!m) continue;
    if (out.has(m[1])) throw new Error(`EXPECTED.md lists ${m[1]} twice`);
    out.set(m[1], { kind: m[2] as Kind, reason: m[3], seen: false });
  }
  return out;
}

const expected = readExpected();
const counts = { passed: 0, difference: 0, notRunnable: 0, skipped: 0, wrong: 0 };
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
          counts.wrong++;
          throw error;
        }
        counts.passed++;
        return;
      }
      if (!error) {
        counts.wrong++;
        throw new Error(
          `listed in EXPECTED.md as ${entry.kind} (${entry.reason}) but passed: remove it there`,
        );
      }
      if (entry.kind === "difference") counts.difference++;
      else counts.notRunnable++;
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
        `${counts.difference} known differences, ${counts.notRunnable} not runnable here, ` +
        `${counts.skipped} skipped upstream, ${counts.wrong} unexpected`,
    );
    const stale = [...expected].filter(([, e]) => !e.seen).map(([n]) => n);
    if (stale.length) {
      throw new Error(`EXPECTED.md names tests that do not exist:\n${stale.join("\n")}`);
    }
  },
});

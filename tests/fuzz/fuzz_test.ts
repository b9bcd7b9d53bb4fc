/**
 * The short fuzz pass of `deno task test` (CI): every route of routes.ts and
 * console_routes.ts (the console's, against a second process),
 * FUZZ_REQUESTS requests per route and pass (default 40), two passes, and
 * the conflicting pairs. The full pass is `deno task test:fuzz` (full.ts).
 * A failure prints FUZZ_SEED; `FUZZ_SEED=<n> FUZZ_ROUTE=<name part>` replays it.
 */
import assert from "node:assert/strict";
import { FLAT_MEMORY, memoryGrowth, runFuzz } from "./harness.ts";
import { GRANTS, registeredRoutes, ROUTES } from "./routes.ts";
import { runSeed } from "./rng.ts";
import { EXCLUDED } from "./exclusions.ts";
import { CONSOLE_SPECS, consoleRows, rowOf } from "./console_routes.ts";

Deno.test("fuzz: routes.ts lists every row of the route table, and every /token grant", () => {
  const registered = registeredRoutes();
  const listed = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));
  assert.deepEqual(registered.filter((r) => !listed.has(r)), [], "routes missing in routes.ts");
  // A HEAD request is answered by the GET row (hono).
  const answered = (r: string) =>
    registered.includes(r) || (r.startsWith("HEAD ") && registered.includes(`GET ${r.slice(5)}`));
  assert.deepEqual([...listed].filter((r) => !answered(r)), [], "stale routes.ts");
  const grants = ROUTES.filter((r) => r.path === "/token").map((r) => r.fixedQuery?.split("=")[1]);
  assert.deepEqual(grants.sort(), [...GRANTS].sort());
});

Deno.test("fuzz: console_routes.ts covers every row of the console's route table", () => {
  const rows = consoleRows();
  const covered = new Set(CONSOLE_SPECS.map(rowOf));
  assert.deepEqual(rows.filter((r) => !covered.has(r)), [], "console routes without an entry");
  assert.deepEqual([...covered].filter((r) => !rows.includes(r)), [], "stale console_routes.ts");
  for (const spec of CONSOLE_SPECS) {
    assert.equal(spec.auth, "console", spec.name);
    assert.ok(spec.path.startsWith("/console"), spec.name);
  }
});

Deno.test("fuzz: short pass, no 5xx, no leak, no write on refusal, consistent, flat memory", async () => {
  const seed = runSeed();
  const perRoute = Number(Deno.env.get("FUZZ_REQUESTS") ?? 40);
  console.log(`fuzz short pass: FUZZ_SEED=${seed} FUZZ_REQUESTS=${perRoute}`);
  const report = await runFuzz({
    seed,
    perRoute,
    passes: 2,
    pairs: Number(Deno.env.get("FUZZ_PAIRS") ?? 3),
    concurrency: 4,
    routeFilter: Deno.env.get("FUZZ_ROUTE") || undefined,
  });
  console.log(
    `fuzz: FUZZ_SEED=${seed} ${report.requests} requests in ${report.seconds} s, by status ${
      JSON.stringify(report.byStatus)
    }, 5xx ${report.fiveXx}, excluded ${
      JSON.stringify(report.excluded)
    } (${EXCLUDED.length} classes), RSS ${JSON.stringify(report.rssMiB)} MiB, after GC ${
      JSON.stringify(report.afterGcMiB)
    } MiB, pairs ${JSON.stringify(report.pairs)}`,
  );
  assert.deepEqual(report.failures, [], `FUZZ_SEED=${seed}: ${report.failures.length} failures`);
  // Flat memory, as the full pass (full.ts) asserts it: measured after GC, warm-up shows little.
  const grew = memoryGrowth(report, FLAT_MEMORY);
  assert.equal(grew, "", `FUZZ_SEED=${seed}: ${grew}`);
});

/**
 * The full fuzz pass, `deno task test:fuzz`: two passes of FUZZ_REQUESTS
 * (default 5,000) requests per route each, so at least 10,000 per route, and
 * FUZZ_PAIRS (default 20) concurrent conflicting pairs per kind and pass.
 * Not part of `deno task test` (the name does not end in _test.ts). Writes
 * the report to FUZZ_REPORT (default .authsvc/fuzz-report.json) and prints
 * the figures bench/README.md records.
 *
 *   deno task test:fuzz
 *   FUZZ_SEED=123 FUZZ_ROUTE="PUT /user" FUZZ_REQUESTS=2000 deno task test:fuzz
 */
import assert from "node:assert/strict";
import { FLAT_MEMORY, memoryGrowth, runFuzz } from "./harness.ts";
import { runSeed } from "./rng.ts";

Deno.test("fuzz: full pass", async () => {
  const seed = runSeed();
  const perRoute = Number(Deno.env.get("FUZZ_REQUESTS") ?? 5000);
  console.log(`fuzz full pass: FUZZ_SEED=${seed} FUZZ_REQUESTS=${perRoute} per route and pass`);
  const report = await runFuzz({
    seed,
    perRoute,
    passes: 2,
    pairs: Number(Deno.env.get("FUZZ_PAIRS") ?? 20),
    concurrency: 4,
    routeFilter: Deno.env.get("FUZZ_ROUTE") || undefined,
    verbose: true,
  });
  const out = Deno.env.get("FUZZ_REPORT") ?? ".authsvc/fuzz-report.json";
  await Deno.mkdir(new URL(".", `file://${Deno.cwd()}/${out}`), { recursive: true });
  await Deno.writeTextFile(out, JSON.stringify(report, null, 2));
  console.log(
    `fuzz: FUZZ_SEED=${seed} ${report.requests} requests in ${report.seconds} s; per route ${
      JSON.stringify(report.perRoute)
    }; by status ${JSON.stringify(report.byStatus)}; 5xx ${report.fiveXx}; excluded ${
      JSON.stringify(report.excluded)
    }; RSS ${JSON.stringify(report.rssMiB)} MiB; after GC ${
      JSON.stringify(report.afterGcMiB)
    } MiB; integrity ${JSON.stringify(report.integrity)}; pairs ${
      JSON.stringify(report.pairs)
    }; report in ${out}`,
  );
  assert.deepEqual(report.failures, [], `FUZZ_SEED=${seed}: ${report.failures.length} failures`);
  const grew = memoryGrowth(report, FLAT_MEMORY);
  assert.equal(grew, "", `FUZZ_SEED=${seed}: ${grew}`);
});

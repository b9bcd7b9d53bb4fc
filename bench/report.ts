/**
 * Prints a result file of `deno task bench` as the Markdown tables of
 * bench/README.md:
 *
 *   deno run --lock=deno.dev.lock -A bench/report.ts bench/results/latest.json
 */
import type { WrkResult } from "./wrk.ts";

interface Target {
  value: number | null;
  goal: number;
  op: string;
  met: boolean;
}

interface Result {
  date: string;
  machine: {
    cores: number;
    memoryGiB: number;
    deno: string;
    v8: string;
    os: string;
    cpuModel: string;
    uptime: string;
    uptimeAfter?: string;
    postgresServer?: string;
  };
  settings: Record<string, unknown>;
  bcrypt: {
    start: { medianMs: number };
    end: { medianMs: number };
    ceilingPerSec: number;
    parallelWorkersPerSec?: number;
  };
  results: Record<string, WrkResult | null>;
  ratios: Record<string, number | null>;
  targets: Record<string, Target>;
  clientBench: { printed?: string; benches?: { name: string; avgNs: number | null }[] } | null;
  totalSec: number;
}

const file = Deno.args[0] ?? "bench/results/latest.json";
const parsed: Result | { passes: Record<string, Result> } = JSON.parse(
  await Deno.readTextFile(file),
);
// A run of two passes (the server as deployed, then with metrics on), or an older run of one.
const passes = "passes" in parsed ? Object.entries(parsed.passes) : [["", parsed] as const];
const out: string[] = [];
for (const [name, r] of passes) {
  if (name) out.push(`### Pass "${name}"`, "");
  report(r);
  out.push("");
}
console.log(out.join("\n").trimEnd());

function report(r: Result): void {
  const m = r.machine;
  out.push(
    `Run of ${r.date.slice(0, 16).replace("T", " ")} UTC (\`${
      file.split("/").pop()
    }\`), ${r.totalSec} s in all.`,
    "",
    `Machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.os}, Deno ${m.deno} (V8 ${m.v8}), PostgreSQL ${
      m.postgresServer ?? "?"
    }.`,
    "",
    `Load: \`${m.uptime}\` at the start, \`${m.uptimeAfter ?? "?"}\` at the end.`,
    "",
    "| run | connections | requests/s | p50 ms | p99 ms | statuses |",
    "| --- | ---: | ---: | ---: | ---: | --- |",
  );
  for (const [k, v] of Object.entries(r.results)) {
    if (!v) continue;
    const poolMax = r.settings.oneQueryBaselinePoolMax;
    const name = k === "baseline_one_query" && poolMax ? `${k} (the fastest: max${poolMax})` : k;
    out.push(
      `| ${name} | ${v.connections} | ${v.rps} | ${v.p50Ms} | ${v.p99Ms} | ${
        Object.entries(v.statuses).map(([s, n]) => `${s}: ${n}`).join(", ")
      } |`,
    );
  }
  out.push(
    "",
    `bcrypt cost 10 verify (hash-wasm, one core): ${r.bcrypt.start.medianMs} ms at the start, ${r.bcrypt.end.medianMs} ms at the end; ceiling ${r.bcrypt.ceilingPerSec}/s (cores ÷ the faster median)${
      r.bcrypt.parallelWorkersPerSec === undefined
        ? ""
        : `; ${m.cores} workers verifying at once measured ${r.bcrypt.parallelWorkersPerSec}/s`
    }.`,
    "",
    "| target | measured | goal | |",
    "| --- | ---: | ---: | --- |",
  );
  for (const [k, t] of Object.entries(r.targets)) {
    out.push(
      `| ${k} | ${t.value ?? "not measured"} | ${t.op} ${t.goal} | ${
        t.met ? "met" : "**missed**"
      } |`,
    );
  }
  out.push(
    "",
    "Ratios: " + Object.entries(r.ratios).map(([k, v]) => `${k} ${v ?? "—"}`).join(", ") + ".",
  );
  if (r.clientBench?.benches?.length) {
    out.push(
      "",
      "Client library bench (`bench/client_bench.ts`): " +
        r.clientBench.benches.map((b) =>
          `${b.name} ${b.avgNs === null ? "failed" : `${(b.avgNs / 1000).toFixed(1)} µs`}`
        ).join(", ") + ".",
    );
    if (r.clientBench.printed) out.push("", "```", r.clientBench.printed, "```");
  }
}

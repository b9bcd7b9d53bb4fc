/**
 * `deno task bench --processes=N`: GET /user and the refresh grant served by
 * one server process, then by N processes on one PostgreSQL database (same
 * DB_NAMESPACE, each on its own port, each with its own wrk taking an equal
 * share of the connections), in one run; the N-process figure is the sum.
 *
 *   deno task bench --processes=2 [--duration=10]
 *
 * Writes bench/results/processes-latest.json.
 */
import postgres from "postgres";
import { ensureWrk, runWrk, type WrkResult } from "./wrk.ts";
import {
  dropNamespaceObjects,
  postgresUrl,
  randomNamespace,
  startServerProcess,
} from "../tests/helpers/bench_process.ts";
import { createFixtures } from "./fixtures.ts";
import { machineInfo } from "./machine.ts";

const arg = (name: string, dflt: number) =>
  Number(Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? dflt);
const CONNECTIONS = 32;
const DB_URL = Deno.env.get("BENCH_DATABASE_URL") || postgresUrl();
const RESULTS = new URL("./results/", import.meta.url);
const started = Date.now();
const log = (msg: string) =>
  console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

/** Runs one wrk per URL at once, each with an equal share of the connections; the sum. */
async function together(
  name: string,
  urls: string[],
  opts: (i: number) => Omit<Parameters<typeof runWrk>[0], "name" | "url" | "connections">,
  warm: boolean,
): Promise<{ rps: number; runs: WrkResult[] }> {
  const each = CONNECTIONS / urls.length;
  if (warm) {
    await Promise.all(
      urls.map((url, i) => runWrk({ ...opts(i), name, url, connections: each, durationSec: 2 })),
    );
  }
  const runs = await Promise.all(
    urls.map((url, i) => runWrk({ ...opts(i), name: `${name}_${i}`, url, connections: each })),
  );
  const rps = Math.round(runs.reduce((a, r) => a + r.rps, 0) * 10) / 10;
  log(
    `${name.padEnd(24)} ${String(rps).padStart(8)} req/s  (${runs.map((r) => r.rps).join(" + ")})`,
  );
  return { rps, runs };
}

export async function processesMain(n: number): Promise<number> {
  const duration = arg("duration", 10);
  const machine = await machineInfo();
  log(`machine: ${machine.cores} cores, load ${machine.loadavg.join(" ")}; ${n} processes`);
  await ensureWrk(); // a fresh machine has none yet
  const sql = postgres(DB_URL, { max: 1, onnotice: () => {} });
  const ns = randomNamespace("procs");
  const results: Record<string, unknown> = {};
  try {
    const env = {
      DATABASE_URL: DB_URL,
      AUTHSVC_DB_NAMESPACE: ns,
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
      AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "1000000000/1h",
      AUTHSVC_RATE_LIMIT_SIGNUP: "1000000000/1h",
      LOG_LEVEL: "error",
    };
    const procs = [];
    for (let i = 0; i < n; i++) procs.push(await startServerProcess(env));
    const dir = await Deno.makeTempDir({ prefix: "authsvc-procs-" });
    try {
      const POOL = CONNECTIONS * 2;
      const fx = await createFixtures(procs[0].url, { users: 16, refreshPool: 2 * POOL + 1 });
      if (!fx.accessToken || fx.refreshTokens.length < 2 * POOL) {
        throw new Error(`fixtures failed: ${fx.notes.join("; ")}`);
      }
      // Pool 0 for one process; pool 1 split between the n processes.
      const pool = async (name: string, tokens: string[]) => {
        const file = `${dir}/${name}.txt`;
        await Deno.writeTextFile(file, tokens.join("\n") + "\n");
        return file;
      };
      const one = await pool("one", fx.refreshTokens.slice(0, POOL));
      const share = POOL / n;
      const many = await Promise.all(
        procs.map((_, i) =>
          pool(`many${i}`, fx.refreshTokens.slice(POOL + i * share, POOL + (i + 1) * share))
        ),
      );
      const getUser = () => ({
        script: "getWithToken" as const,
        args: [fx.accessToken!, "0"],
        durationSec: duration,
      });
      results.get_user_1 = await together("get_user_1", [`${procs[0].url}/user`], getUser, true);
      results[`get_user_${n}`] = await together(
        `get_user_${n}`,
        procs.map((p) => `${p.url}/user`),
        getUser,
        true,
      );
      results.refresh_1 = await together("refresh_1", [`${procs[0].url}/`], () => ({
        script: "refresh",
        args: [one],
        durationSec: duration,
      }), false);
      results[`refresh_${n}`] = await together(
        `refresh_${n}`,
        procs.map((p) => `${p.url}/`),
        (i) => ({ script: "refresh", args: [many[i]], durationSec: duration }),
        false,
      );
    } finally {
      for (const p of procs) await p.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  } finally {
    await dropNamespaceObjects((text, params) => sql.unsafe(text, params as string[]), `${ns}_`);
    await sql.end({ timeout: 5 });
  }
  const rps = (k: string) => (results[k] as { rps: number } | undefined)?.rps ?? 0;
  const out = {
    date: new Date().toISOString(),
    processes: n,
    machine: { ...machine, loadavgAfter: Deno.loadavg() },
    results,
    scaling: {
      get_user: Math.round((rps(`get_user_${n}`) / rps("get_user_1")) * 1000) / 1000,
      refresh: Math.round((rps(`refresh_${n}`) / rps("refresh_1")) * 1000) / 1000,
    },
  };
  await Deno.mkdir(RESULTS, { recursive: true });
  await Deno.writeTextFile(
    new URL("processes-latest.json", RESULTS),
    JSON.stringify(out, null, 2) + "\n",
  );
  console.log(`${n} processes / 1:`, JSON.stringify(out.scaling));
  return 0;
}

if (import.meta.main) Deno.exit(await processesMain(arg("processes", 2)));

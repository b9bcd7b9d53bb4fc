/**
 * `deno task bench`: measures the server's hot endpoints against the
 * baselines that bound them on this machine, in one run of a few minutes.
 *
 *   deno task bench             # full run (about 3 minutes), writes bench/results/latest.json
 *   deno task bench --record    # also writes bench/results/<date>.json (commit that one)
 *   deno task bench --quick     # 3-second runs, to check the harness (--duration=N: N seconds)
 *   deno task bench --profile   # the server runs with --cpu-prof (profile in bench/results/prof/)
 *   nice -n 19 deno task bench --scale   # 1,000,000 users, 5,000,000 refresh tokens (bench/scale.ts)
 *   deno task bench --processes=2   # GET /user and refresh on one and on two processes (bench/processes.ts)
 *   deno task bench --only=get_user,mixed   # just those runs (baseline_bare, baseline_one_query,
 *       # baseline_four_queries, get_user, get_user_uncached, get_user_one_query, refresh_token,
 *       # password, signup, mixed, mixed_one_query, client)
 *
 * See bench/README.md for what each figure means and the recorded numbers.
 */
import postgres from "postgres";
import { ensureWrk, runWrk, type WrkResult } from "./wrk.ts";
import { type BcryptTiming, measureBcryptParallel, measureBcryptVerify } from "./bcrypt.ts";
import { DEV_LOCK, startBaseline } from "./baselines.ts";
import {
  dropNamespaceObjects,
  postgresUrl,
  PROCESS_JWT_SECRET,
  randomNamespace,
  startServerProcess,
} from "../tests/helpers/bench_process.ts";
import { createFixtures } from "./fixtures.ts";
import { cpuReading } from "./cpu.ts";
import { machineInfo } from "./machine.ts";
import { scaleMain } from "./scale.ts";
import { processesMain } from "./processes.ts";

const flags = new Set(Deno.args);
/** `--only=get_user,password` runs just those (names as in the results); default all. */
const ONLY = new Set(
  Deno.args.find((a) => a.startsWith("--only="))?.slice(7).split(",").filter(Boolean) ?? [],
);
const wanted = (name: string) => ONLY.size === 0 || ONLY.has(name);
const QUICK = flags.has("--quick");
const DURATION = Number(
  Deno.args.find((a) => a.startsWith("--duration="))?.slice(11) ?? (QUICK ? 3 : 10),
);
const WARMUP = QUICK ? 1 : 2;
const CONNECTIONS = 32;
/** postgres.js pool sizes the one-query baseline is run at (1: one connection pipelining all; 10: its default). */
const ONE_QUERY_POOL_SIZES = [1, 4, 10, 50];
const PASSWORD_CONNECTIONS = 8;
/**
 * The refresh grant and its baseline alternate in rounds of about DURATION / 4 (each side about
 * DURATION in all), in an order that gives both the same mean position in time.
 */
const REFRESH_ROUNDS = [
  "grant",
  "baseline",
  "baseline",
  "grant",
  "grant",
  "baseline",
  "baseline",
  "grant",
] as const;
/**
 * GET /user with the answer kept, with nothing kept, and the one-query baseline alternate in
 * rounds of about DURATION / 4 (each side about DURATION in all), every side at the same mean
 * position in time.
 */
const GET_USER_ORDER = ["uncached", "baseline", "kept", "kept", "baseline", "uncached"] as const;
const GET_USER_ROUNDS = [...GET_USER_ORDER, ...GET_USER_ORDER];
const MIXED_USER_CONNECTIONS = 4;
const MIXED_USER_DELAY_MS = 10;
const DB_URL = Deno.env.get("BENCH_DATABASE_URL") || postgresUrl();
const RESULTS = new URL("./results/", import.meta.url);

const started = Date.now();
const log = (msg: string) =>
  console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${msg}`);

/**
 * One wrk run after a short warm-up at the same settings. With `pid`, the CPU time of that
 * server process and of PostgreSQL per request is recorded too (less noisy than requests/s on a
 * shared machine).
 */
async function measure(
  opts: Parameters<typeof runWrk>[0],
  warm = true,
  pid?: number,
): Promise<WrkResult> {
  if (warm) await runWrk({ ...opts, durationSec: WARMUP });
  const reading = pid ? cpuReading(pid) : undefined;
  const r = await runWrk({ ...opts, durationSec: opts.durationSec ?? DURATION });
  let cpu = "";
  if (reading && r.requests > 0) {
    const c = reading(r.requests);
    r.serverCpuUsPerRequest = c.serverUs;
    r.postgresCpuUsPerRequest = c.postgresUs;
    r.serverThreadCpuUsPerRequest = c.threadsUs;
    cpu = `  CPU/request: server ${c.serverUs} µs, PostgreSQL ${c.postgresUs} µs; by thread ${
      JSON.stringify(c.threadsUs)
    }`;
  }
  log(
    `${r.name.padEnd(26)} ${
      String(r.rps).padStart(9)
    } req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  ${JSON.stringify(r.statuses)}${cpu}`,
  );
  return r;
}

/**
 * Rounds of one subject as one result: requests and time summed, requests/s over the whole,
 * CPU per request weighted by requests, the worst p99 and the median round's p50 (wrk's
 * histograms are not kept, so the percentiles are of rounds, not of all requests).
 */
function combineRounds(name: string, rounds: WrkResult[]): WrkResult {
  const requests = rounds.reduce((a, r) => a + r.requests, 0);
  const durationSec = rounds.reduce((a, r) => a + r.durationSec, 0);
  const ok = rounds.reduce((a, r) => a + r.rps * r.durationSec, 0);
  const weighted = (f: (r: WrkResult) => number | undefined) => {
    if (rounds.some((r) => f(r) === undefined) || requests === 0) return undefined;
    return Math.round(rounds.reduce((a, r) => a + f(r)! * r.requests, 0) / requests * 10) / 10;
  };
  const statuses: Record<string, number> = {};
  const errors = { connect: 0, read: 0, write: 0, timeout: 0, status: 0 };
  for (const r of rounds) {
    for (const [k, v] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
    for (const k of Object.keys(errors) as (keyof typeof errors)[]) errors[k] += r.errors[k];
  }
  const sorted = (f: (r: WrkResult) => number) => rounds.map(f).sort((a, b) => a - b);
  const mid = (xs: number[]) => xs[Math.floor((xs.length - 1) / 2)];
  return {
    name,
    connections: rounds[0].connections,
    durationSec: Math.round(durationSec * 100) / 100,
    requests,
    rps: Math.round((ok / durationSec) * 10) / 10,
    p50Ms: mid(sorted((r) => r.p50Ms)),
    p90Ms: mid(sorted((r) => r.p90Ms)),
    p99Ms: Math.max(...rounds.map((r) => r.p99Ms)),
    meanMs: Math.round(rounds.reduce((a, r) => a + r.meanMs * r.requests, 0) / requests * 100) /
      100,
    maxMs: Math.max(...rounds.map((r) => r.maxMs)),
    errors,
    statuses,
    serverCpuUsPerRequest: weighted((r) => r.serverCpuUsPerRequest),
    postgresCpuUsPerRequest: weighted((r) => r.postgresCpuUsPerRequest),
  };
}

const ratio = (a: number, b: number) => (a > 0 && b > 0 ? Math.round((a / b) * 1000) / 1000 : null);

/**
 * The passes of a run: the server as deployed (LOG_LEVEL info, the access log written to a
 * file), then the same with Prometheus metrics on. Each pass measures its own baselines, so
 * its ratios are of one stretch of time on this shared machine. `--pass=metrics` runs one.
 */
const PASSES: [string, Record<string, string>][] = [
  ["deployed", {}],
  ["metrics", {
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "prometheus",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: "0",
  }],
];

async function main(): Promise<number> {
  if (flags.has("--scale")) return await scaleMain();
  const processes = Deno.args.find((a) => a.startsWith("--processes="));
  if (processes) return await processesMain(Number(processes.slice(12)));
  const only = Deno.args.find((a) => a.startsWith("--pass="))?.slice(7);
  const passes: Record<string, Awaited<ReturnType<typeof benchPass>>> = {};
  let poolMax: number | null = null;
  for (const [name, env] of PASSES) {
    if (only && only !== name) continue;
    log(`pass "${name}": LOG_LEVEL=info, access log to a file ${JSON.stringify(env)}`);
    const out = await benchPass(name, env, poolMax);
    poolMax ??= out.settings.oneQueryBaselinePoolMax;
    passes[name] = out;
  }
  const out = { date: new Date().toISOString(), passes };
  await Deno.mkdir(RESULTS, { recursive: true });
  const json = JSON.stringify(out, null, 2) + "\n";
  await Deno.writeTextFile(new URL("latest.json", RESULTS), json);
  if (flags.has("--record")) {
    await Deno.writeTextFile(new URL(`${out.date.slice(0, 10)}.json`, RESULTS), json);
  }
  for (const [name, p] of Object.entries(passes)) {
    console.log(`\npass ${name}: ratios:`, JSON.stringify(p.ratios));
    for (const [k, t] of Object.entries(p.targets)) {
      console.log(
        `${name}: target ${k}: ${t.value ?? "not measured"} ${t.op} ${t.goal}: ${
          t.met ? "met" : "MISSED"
        }`,
      );
    }
    for (const n of p.notes) console.log(`${name}: note: ${n}`);
  }
  log(`done; results in bench/results/latest.json`);
  return 0;
}

/**
 * One pass: bcrypt's ceiling, the baselines (the one-query baseline's pool-size sweep unless
 * `poolMax` is known from an earlier pass), the server with `passEnv`, the ratios and targets.
 */
async function benchPass(
  passName: string,
  passEnv: Record<string, string>,
  poolMax: number | null,
) {
  const machine = await machineInfo();
  log(
    `machine: ${machine.cores} cores, ${machine.memoryGiB} GiB, Deno ${machine.deno}, load ${
      machine.loadavg.join(" ")
    }`,
  );
  await ensureWrk();

  // 1. bcrypt on one core, while nothing else of ours runs (again at the end: the faster
  //    of the two medians sets the ceiling, so a disturbed sample cannot lower the bar).
  const bcryptStart: BcryptTiming = await measureBcryptVerify(QUICK ? 5 : 15);
  log(`bcrypt cost 10 verify: ${bcryptStart.medianMs} ms median`);
  const bcryptParallel = await measureBcryptParallel(machine.cores, QUICK ? 1500 : 3000);
  log(`bcrypt with ${machine.cores} workers at once: ${bcryptParallel} verifies/s`);

  const sql = postgres(DB_URL, { max: 2, onnotice: () => {} });
  const [{ version: postgresServer }] = await sql.unsafe(`SHOW server_version`).then((r) =>
    r.map((x) => ({ version: String(x.server_version) }))
  );
  const ns = randomNamespace("bench");
  const baselineTable = `${ns}_baseline`;
  const results: Record<string, WrkResult | null> = {};
  let baselinePoolMax: number | null = null;
  const notes: string[] = [];
  let clientBench: unknown = null;
  let refreshRounds: Record<"grant" | "baseline", WrkResult[]> | null = null;
  const bcryptAround: BcryptTiming[] = [];
  try {
    // 2. Baselines.
    await sql.unsafe(
      `CREATE TABLE ${baselineTable} (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), email text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
    await sql.unsafe(
      `INSERT INTO ${baselineTable} (email) SELECT 'user' || g || '@bench.example.com' FROM generate_series(1, 10000) g`,
    );
    await sql.unsafe(`ANALYZE ${baselineTable}`);
    // The one-query baseline through postgres.js at several pool sizes: the fastest is the
    // bound (on this machine one connection pipelining everything wins by far).
    const runs: [string, string[]][] = [["baseline_bare", ["bare"]]];
    if (wanted("baseline_one_query")) {
      for (const max of poolMax === null ? ONE_QUERY_POOL_SIZES : [poolMax]) {
        runs.push([`baseline_one_query_max${max}`, ["query", DB_URL, baselineTable, String(max)]]);
      }
    }
    const runBaseline = async (name: string, args: string[]) => {
      const b = await startBaseline([...args]);
      try {
        results[name] = await measure({
          name,
          url: `${b.url}/`,
          script: "get",
          connections: CONNECTIONS,
          durationSec: DURATION,
        });
      } finally {
        await b.stop();
      }
    };
    for (const [name, args] of runs) {
      if (!wanted(name) && !name.startsWith("baseline_one_query_max")) continue;
      await runBaseline(name, args);
    }
    const sweep = (poolMax === null ? ONE_QUERY_POOL_SIZES : [poolMax]).map((max) => ({
      max,
      result: results[`baseline_one_query_max${max}`],
    })).filter((r) => r.result);
    if (sweep.length) {
      const best = sweep.reduce((a, b) => (b.result!.rps > a.result!.rps ? b : a));
      results.baseline_one_query = best.result!;
      baselinePoolMax = best.max;
      log(`baseline_one_query: postgres.js max ${best.max} was the fastest pool size`);
    }
    // Every postgres.js subject runs at the fastest pool size of the sweep (one connection when
    // the sweep did not run: the fastest on these machines), so each comparison is like for like.
    const fastestPool = String(baselinePoolMax ?? 1);
    if (wanted("baseline_four_queries")) {
      await runBaseline("baseline_four_queries", ["query4", DB_URL, baselineTable, fastestPool]);
    }

    // 3. The server, as a separate process on PostgreSQL.
    const profDir = new URL("./prof/", RESULTS);
    const logDir = await Deno.makeTempDir({ prefix: "authsvc-bench-log-" });
    const accessLog = `${logDir}/access.log`;
    if (flags.has("--profile")) await Deno.mkdir(profDir, { recursive: true });
    const serverEnv = {
      DATABASE_URL: DB_URL,
      AUTHSVC_DB_NAMESPACE: ns,
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
      // Per-IP limits would stop a load generator on 127.0.0.1 within a second.
      AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "1000000000/1h",
      AUTHSVC_RATE_LIMIT_SIGNUP: "1000000000/1h",
      AUTHSVC_RATE_LIMIT_EMAIL_SENT: "1000000000/1h",
      AUTHSVC_RATE_LIMIT_VERIFY: "1000000000/1h",
      AUTHSVC_RATE_LIMIT_OTP: "1000000000/1h",
      // As deployed: the default log level, the access log written to a file.
      LOG_LEVEL: "info",
      AUTHSVC_LOG_FILE: accessLog,
      ...passEnv,
      // Development A/B runs: settings of the server under test, as JSON (not for recordings).
      ...JSON.parse(Deno.env.get("BENCH_SERVER_ENV") ?? "{}"),
    };
    const srv = await startServerProcess(serverEnv, {
      denoFlags: [
        ...(flags.has("--profile") ? ["--cpu-prof", `--cpu-prof-dir=${profDir.pathname}`] : []),
        ...(Deno.env.get("BENCH_SERVER_DENO_FLAGS")?.split(" ").filter(Boolean) ?? []),
      ],
    });
    try {
      log(`server process ${srv.pid} at ${srv.url}, namespace ${ns}`);
      // Two pools of refresh tokens: one for the grant, one for its one-statement baseline.
      const POOL = CONNECTIONS * 2;
      const fx = await createFixtures(srv.url, {
        users: 16,
        refreshPool: wanted("refresh_token") ? REFRESH_ROUNDS.length * POOL + 1 : 1,
      });
      notes.push(...fx.notes);
      const dir = await Deno.makeTempDir({ prefix: "authsvc-bench-" });
      const usersFile = `${dir}/users.txt`;
      await Deno.writeTextFile(usersFile, fx.emails.join("\n") + "\n");

      // GET /user (kept answer), GET /user with nothing kept (AUTHSVC_API_USER_CACHE_SIZE=0: a
      // second server process on the same database, every request reading the user, identities
      // and factors, as a user's first request after a change does; server/api/user_profile.ts)
      // and the one-query baseline at the sweep's fastest pool size, in alternating rounds
      // (GET_USER_ROUNDS): the machine's drift over the minute falls on all three alike. Their
      // ratios are against the baseline's rounds, not against the sweep run a minute before
      // (bench/README.md, "GET /user in alternating rounds").
      if (fx.accessToken && (wanted("get_user") || wanted("get_user_uncached"))) {
        const sides = {
          kept: wanted("get_user") ? { url: `${srv.url}/user`, pid: srv.pid } : null,
          uncached: null as { url: string; pid: number } | null,
          baseline: null as { url: string; pid: number } | null,
        };
        const cold = wanted("get_user_uncached")
          ? await startServerProcess({ ...serverEnv, AUTHSVC_API_USER_CACHE_SIZE: "0" })
          : null;
        const base = baselinePoolMax !== null
          ? await startBaseline(["query", DB_URL, baselineTable, fastestPool])
          : null;
        try {
          if (cold) sides.uncached = { url: `${cold.url}/user`, pid: cold.pid };
          if (base) sides.baseline = { url: `${base.url}/`, pid: base.pid };
          const rounds: Record<keyof typeof sides, WrkResult[]> = {
            kept: [],
            uncached: [],
            baseline: [],
          };
          const warmed = new Set<string>();
          for (const [i, side] of GET_USER_ROUNDS.entries()) {
            const target = sides[side];
            if (!target) continue;
            const name = side === "kept"
              ? "get_user"
              : side === "uncached"
              ? "get_user_uncached"
              : `baseline_one_query_max${fastestPool}`;
            rounds[side].push(
              await measure(
                {
                  name: `${name} (round ${i + 1})`,
                  url: target.url,
                  script: side === "baseline" ? "get" : "getWithToken",
                  args: side === "baseline" ? [] : [fx.accessToken, "0"],
                  connections: CONNECTIONS,
                  durationSec: Math.max(1, Math.round(DURATION / 4)), // wrk takes whole seconds
                },
                !warmed.has(side), // each side warms up once, before its first round
                target.pid,
              ),
            );
            warmed.add(side);
          }
          if (rounds.kept.length) results.get_user = combineRounds("get_user", rounds.kept);
          if (rounds.uncached.length) {
            results.get_user_uncached = combineRounds("get_user_uncached", rounds.uncached);
          }
          if (rounds.baseline.length) {
            results.baseline_one_query_rounds = combineRounds(
              "baseline_one_query_rounds",
              rounds.baseline,
            );
          }
        } finally {
          await cold?.stop();
          await base?.stop();
        }
      }
      if (fx.accessToken && wanted("get_user_one_query")) {
        const b = await startBaseline(
          [DB_URL, `${ns}_`, PROCESS_JWT_SECRET, fastestPool],
          "./get_user_one_query.ts",
        );
        try {
          results.get_user_one_query = await measure({
            name: "get_user_one_query",
            url: `${b.url}/user`,
            script: "getWithToken",
            args: [fx.accessToken, "0"],
            connections: CONNECTIONS,
            durationSec: DURATION,
          });
        } finally {
          await b.stop();
        }
      }
      // The grant and its one-statement baseline in alternating rounds (REFRESH_ROUNDS), each
      // after a CHECKPOINT, each on a pool of never-used tokens: the
      // machine's drift over the minute and the WAL's full-page writes after a checkpoint fall
      // on both sides alike (bench/README.md, "Refresh in alternating rounds"). No warm-up
      // before a round: it would use up the pool's tokens (the server's JIT is warm from
      // get_user and the fixtures; the baseline's from its first round).
      if (fx.refreshTokens.length >= REFRESH_ROUNDS.length * POOL && wanted("refresh_token")) {
        const b = await startBaseline(
          [DB_URL, `${ns}_`, PROCESS_JWT_SECRET],
          "./refresh_one_statement.ts",
        );
        try {
          const rounds: Record<"grant" | "baseline", WrkResult[]> = { grant: [], baseline: [] };
          for (const [i, side] of REFRESH_ROUNDS.entries()) {
            const file = `${dir}/refresh_${i}.txt`;
            await Deno.writeTextFile(
              file,
              fx.refreshTokens.slice(i * POOL, (i + 1) * POOL).join("\n") + "\n",
            );
            await sql.unsafe("CHECKPOINT").catch((e) => notes.push(`CHECKPOINT: ${e}`));
            rounds[side].push(
              await measure(
                {
                  name: side === "grant"
                    ? `refresh_token_grant (round ${i + 1})`
                    : `baseline_refresh_one_statement (round ${i + 1})`,
                  url: side === "grant" ? `${srv.url}/` : `${b.url}/`,
                  script: "refresh",
                  args: [file],
                  connections: CONNECTIONS,
                  durationSec: Math.max(1, Math.round(DURATION / 4)), // wrk takes whole seconds
                },
                false,
                side === "grant" ? srv.pid : b.pid,
              ),
            );
          }
          results.refresh_token = combineRounds("refresh_token_grant", rounds.grant);
          results.baseline_refresh_one_statement = combineRounds(
            "baseline_refresh_one_statement",
            rounds.baseline,
          );
          refreshRounds = rounds;
        } finally {
          await b.stop();
        }
      }
      // The password grant's ceiling is timed right before the password run and right after the
      // sign-up run (the faster sets it), with the server idle: this machine's single-core
      // bcrypt time moves by several per cent within a minute (58.9 and 63.2 ms within one run),
      // so a ceiling timed minutes away measured that drift as much as the server.
      const hashing = (wanted("password") || wanted("signup")) && fx.emails.length > 0;
      if (hashing) {
        bcryptAround.push(await measureBcryptVerify(QUICK ? 5 : 15));
        log(`bcrypt cost 10 verify before the password run: ${bcryptAround[0].medianMs} ms median`);
      }
      results.password = fx.emails.length && wanted("password")
        ? await measure(
          {
            name: "password_grant",
            url: `${srv.url}/`,
            script: "password",
            args: [usersFile, fx.password, "0"],
            connections: PASSWORD_CONNECTIONS,
            durationSec: DURATION,
            timeoutSec: 30,
          },
          true,
          srv.pid,
        )
        : null;
      results.signup = fx.signupWorks && wanted("signup")
        ? await measure(
          {
            name: "signup_autoconfirm",
            url: `${srv.url}/`,
            script: "signup",
            args: [ns, fx.password],
            connections: PASSWORD_CONNECTIONS,
            durationSec: DURATION,
            timeoutSec: 30,
          },
          true,
          srv.pid,
        )
        : null;

      if (hashing) {
        bcryptAround.push(await measureBcryptVerify(QUICK ? 5 : 15));
        log(`bcrypt cost 10 verify after the sign-up run: ${bcryptAround[1].medianMs} ms median`);
      }

      // 4. GET /user latency while the password grant saturates the CPUs; then the same
      //    with the one-query version of GET /user (a separate process: the contention is
      //    for the machine's cores, so it shows what fewer round trips do to the tail).
      const mixed = async (name: string, userUrl: string) => {
        const [pw, user] = await Promise.all([
          runWrk({
            name: `${name}_password_grant`,
            url: `${srv.url}/`,
            script: "password",
            args: [usersFile, fx.password, "0"],
            connections: PASSWORD_CONNECTIONS,
            durationSec: DURATION + 2,
            timeoutSec: 30,
          }),
          (async () => {
            await new Promise((r) => setTimeout(r, 1000)); // let bcrypt saturate first
            return await runWrk({
              name: `${name}_get_user`,
              url: userUrl,
              script: "getWithToken",
              args: [fx.accessToken!, String(MIXED_USER_DELAY_MS)],
              connections: MIXED_USER_CONNECTIONS,
              durationSec: DURATION,
            });
          })(),
        ]);
        results[`${name}_password_grant`] = pw;
        results[`${name}_get_user`] = user;
        log(
          `${name}: password ${pw.rps} req/s; GET /user ${user.rps} req/s p50 ${user.p50Ms} ms p99 ${user.p99Ms} ms`,
        );
      };
      if (fx.accessToken && fx.emails.length && wanted("mixed")) {
        await mixed("mixed", `${srv.url}/user`);
      }
      if (fx.accessToken && fx.emails.length && wanted("mixed_one_query")) {
        const b = await startBaseline(
          [DB_URL, `${ns}_`, PROCESS_JWT_SECRET, fastestPool],
          "./get_user_one_query.ts",
        );
        try {
          await mixed("mixed_one_query", `${b.url}/user`);
        } finally {
          await b.stop();
        }
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    } finally {
      const st = await srv.stop();
      if (st.code !== 0) notes.push(`server exited with ${st.code}: ${srv.output().slice(-2000)}`);
      const size = await Deno.stat(accessLog).then((f) => f.size, () => 0);
      notes.push(`access log (LOG_FILE): ${Math.round(size / 1024 / 1024)} MiB written`);
      await Deno.remove(logDir, { recursive: true }).catch(() => {});
    }

    // 5. The client library's bench.
    if (wanted("client") && passName === PASSES[0][0]) clientBench = await runClientBench();
  } finally {
    await dropNamespaceObjects(
      (text, params) => sql.unsafe(text, params as string[]),
      `${ns}_`,
    );
    await sql.end({ timeout: 5 });
  }

  const bcryptEnd: BcryptTiming = await measureBcryptVerify(QUICK ? 5 : 15);
  const bcrypt = bcryptEnd.medianMs < bcryptStart.medianMs ? bcryptEnd : bcryptStart;
  const bcryptCeiling = Math.round((machine.cores * 1000 / bcrypt.medianMs) * 10) / 10;
  log(
    `bcrypt cost 10 verify again: ${bcryptEnd.medianMs} ms median; ceiling ${machine.cores} cores / ${bcrypt.medianMs} ms = ${bcryptCeiling} verifies/s`,
  );
  // The password and sign-up targets use the ceiling timed around their runs (the faster of
  // the two medians there); without those timings, the run's ends.
  const around = bcryptAround.length
    ? bcryptAround.reduce((a, b) => (b.medianMs < a.medianMs ? b : a))
    : bcrypt;
  const hashCeiling = Math.round((machine.cores * 1000 / around.medianMs) * 10) / 10;
  if (bcryptAround.length) {
    log(
      `password ceiling: ${machine.cores} cores / ${around.medianMs} ms (the faster median around the runs) = ${hashCeiling} verifies/s`,
    );
  }

  // 6. Ratios and targets (issue 39's, bench/README.md).
  const q = results.baseline_one_query?.rps ?? 0;
  // GET /user's targets: against the baseline's rounds alternating with GET /user's (the sweep's
  // run when those did not run).
  const qRounds = results.baseline_one_query_rounds?.rps ?? q;
  const targets = {
    get_user_vs_one_query: target(ratio(results.get_user?.rps ?? 0, qRounds), 0.85, ">="),
    get_user_uncached_vs_one_query: target(
      ratio(results.get_user_uncached?.rps ?? 0, qRounds),
      0.6,
      ">=",
    ),
    password_vs_bcrypt_ceiling: target(
      ratio(results.password?.rps ?? 0, hashCeiling),
      0.9,
      ">=",
    ),
    signup_vs_bcrypt_ceiling: target(ratio(results.signup?.rps ?? 0, hashCeiling), 0.9, ">="),
    get_user_p99_ms_under_password_load: target(results.mixed_get_user?.p99Ms ?? null, 10, "<"),
    refresh_vs_one_statement: target(
      ratio(results.refresh_token?.rps ?? 0, results.baseline_refresh_one_statement?.rps ?? 0),
      0.85,
      ">=",
    ),
  };
  const ratios = {
    get_user_vs_one_query: targets.get_user_vs_one_query.value,
    get_user_vs_bare: ratio(results.get_user?.rps ?? 0, results.baseline_bare?.rps ?? 0),
    get_user_uncached_vs_one_query: targets.get_user_uncached_vs_one_query.value,
    // Against the sweep's run a minute earlier (the definition before 2026-11-27): kept to
    // compare with older recordings.
    get_user_vs_one_query_sweep: ratio(results.get_user?.rps ?? 0, q),
    get_user_uncached_vs_one_query_sweep: ratio(results.get_user_uncached?.rps ?? 0, q),
    get_user_one_query_vs_one_query: ratio(results.get_user_one_query?.rps ?? 0, q),
    get_user_vs_four_queries: ratio(
      results.get_user?.rps ?? 0,
      results.baseline_four_queries?.rps ?? 0,
    ),
    refresh_vs_one_query: ratio(results.refresh_token?.rps ?? 0, q),
    refresh_vs_one_statement: targets.refresh_vs_one_statement.value,
    password_vs_bcrypt_ceiling: targets.password_vs_bcrypt_ceiling.value,
    signup_vs_bcrypt_ceiling: targets.signup_vs_bcrypt_ceiling.value,
    password_vs_bcrypt_parallel_measured: ratio(results.password?.rps ?? 0, bcryptParallel),
    // Against the ceiling of the run's start and end, the faster (the definition before
    // 2026-11-27): kept to compare with older recordings.
    password_vs_bcrypt_ceiling_run_ends: ratio(results.password?.rps ?? 0, bcryptCeiling),
    one_query_vs_bare: ratio(q, results.baseline_bare?.rps ?? 0),
  };
  return {
    pass: passName,
    serverEnv: passEnv,
    date: new Date().toISOString(),
    machine: {
      ...machine,
      postgresServer,
      loadavgAfter: Deno.loadavg(),
      uptimeAfter: new TextDecoder().decode(
        (await new Deno.Command("uptime", { stdout: "piped" }).output()).stdout,
      ).trim(),
    },
    settings: {
      durationSec: DURATION,
      warmupSec: WARMUP,
      connections: CONNECTIONS,
      oneQueryBaselinePoolSizes: ONE_QUERY_POOL_SIZES,
      oneQueryBaselinePoolMax: baselinePoolMax,
      passwordConnections: PASSWORD_CONNECTIONS,
      mixedGetUser: { connections: MIXED_USER_CONNECTIONS, delayMs: MIXED_USER_DELAY_MS },
      loadGenerator: "wrk (Debian), 1 thread",
      database: DB_URL.replace(/\/\/[^@]*@/, "//***@"),
    },
    bcrypt: {
      start: bcryptStart,
      end: bcryptEnd,
      ceilingPerSec: bcryptCeiling,
      aroundPasswordRuns: bcryptAround,
      passwordCeilingPerSec: hashCeiling,
      parallelWorkersPerSec: bcryptParallel,
    },
    results,
    refreshRounds,
    ratios,
    targets,
    clientBench,
    notes,
    totalSec: Math.round((Date.now() - started) / 1000),
  };
}

function target(value: number | null, goal: number, op: ">=" | "<") {
  const met = value !== null && (op === ">=" ? value >= goal : value < goal);
  return { value, goal, op, met };
}

/** Runs `deno bench --json bench/client_bench.ts` when the client's bench exists. */
async function runClientBench(): Promise<unknown> {
  const file = new URL("./client_bench.ts", import.meta.url);
  try {
    await Deno.stat(file);
  } catch {
    log("bench/client_bench.ts does not exist yet: client bench skipped");
    return null;
  }
  log("client bench: deno bench bench/client_bench.ts");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["bench", "-A", DEV_LOCK, "--no-check", "--json", file.pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  // The bench module may print its own lines (e.g. an interleaved ratio) before the JSON.
  const at = text.search(/^\{/m);
  const printed = (at > 0 ? text.slice(0, at) : "").trim();
  for (const line of printed.split("\n").filter(Boolean)) log(`client: ${line}`);
  try {
    const parsed = JSON.parse(text.slice(Math.max(0, at))) as {
      benches: { name: string; results: { ok?: { avg: number; p99: number; n: number } }[] }[];
    };
    const rows = parsed.benches.map((b) => ({
      name: b.name,
      avgNs: b.results[0]?.ok?.avg ?? null,
      p99Ns: b.results[0]?.ok?.p99 ?? null,
      iterations: b.results[0]?.ok?.n ?? null,
    }));
    for (const r of rows) {
      log(`client ${r.name}: ${r.avgNs === null ? "failed" : `${(r.avgNs / 1000).toFixed(2)} µs`}`);
    }
    return { ok: out.success, printed, benches: rows };
  } catch {
    const err = new TextDecoder().decode(out.stderr);
    log(`client bench failed: ${err.slice(-500)}`);
    return { ok: false, error: err.slice(-2000) };
  }
}

if (import.meta.main) Deno.exit(await main());

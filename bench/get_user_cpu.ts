/**
 * CPU per GET /user, from /proc (utime + stime), of the server process and of
 * its PostgreSQL backends (found by `application_name`), for servers built
 * from one or more checkouts, alternated in the same minutes: A, B, A, B ...
 * A busy machine changes requests/s from one minute to the next; the CPU a
 * request costs moves much less.
 *
 *   deno run --lock=deno.dev.lock -A bench/get_user_cpu.ts <label=checkout-dir> [<label=dir> ...]
 *     [--rounds=2] [--seconds=10] [--cache=0] [--path=user|refresh] [--cpu-prof=<dir>]
 *
 * A subject `<label>=baseline` is bench/baseline_server.ts `query` (one
 * primary-key lookup through postgres.js, one connection: `baseline_one_query`)
 * on a table of 10,000 rows of its own.
 *
 * `--path=refresh` measures the refresh grant instead (a pool of 64 live tokens, each
 * answer's rotated token going back into it, as bench/run.ts does).
 *
 * `--cache=0` (the default) runs the servers with AUTHSVC_API_USER_CACHE_SIZE=0,
 * the `get_user_uncached` case of bench/run.ts: every request is a user's
 * first after a change. Each checkout gets its own namespace (its own
 * migrations), dropped at the end.
 */
import { DEV_LOCK } from "./baselines.ts";
import { createFixtures } from "./fixtures.ts";
import { runWrk } from "./wrk.ts";
import { freePort, processEnv } from "../tests/helpers/process.ts";
import { PROCESS_JWT_SECRET } from "../tests/helpers/bench_process.ts";
import { openDb } from "../server/db/db.ts";
import { dropNamespace } from "../tests/helpers/server.ts";

const DB_URL = Deno.env.get("BENCH_DATABASE_URL") ?? Deno.env.get("DATABASE_URL") ??
  "postgres://postgres@127.0.0.1:5432/test";
const flag = (name: string, dflt: string) =>
  Deno.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const ROUNDS = Number(flag("rounds", "2"));
const SECONDS = Number(flag("seconds", "10"));
const CACHE = flag("cache", "0");
const REFRESH = flag("path", "user") === "refresh";
/** `--cpu-prof=<dir>`: the servers run with --cpu-prof (a profile per process in <dir>). */
const PROF = flag("cpu-prof", "");
const subjects = Deno.args.filter((a) => !a.startsWith("--")).map((a) => {
  const [label, dir] = a.split("=");
  return { label, dir };
});
const TICK_US = 1_000_000 / 100; // USER_HZ

async function cpuUs(pid: number): Promise<number> {
  try {
    const f = (await Deno.readTextFile(`/proc/${pid}/stat`)).split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch {
    return 0; // gone
  }
}

const admin = await openDb({ url: DB_URL, dataDir: "", maxPoolSize: 1, prefix: "" });
const namespaces: string[] = [];

async function startServer(dir: string, app: string) {
  const ns = `gucpu${crypto.randomUUID().slice(0, 8)}`;
  namespaces.push(ns);
  const env = processEnv({
    DATABASE_URL: `${DB_URL}?application_name=${app}`,
    AUTHSVC_DB_NAMESPACE: ns,
    AUTHSVC_JWT_SECRET: PROCESS_JWT_SECRET,
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_API_USER_CACHE_SIZE: CACHE,
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "1000000000/1h",
    AUTHSVC_RATE_LIMIT_SIGNUP: "1000000000/1h",
    LOG_LEVEL: "error",
    PORT: String(freePort()),
  });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-P=server",
      ...(PROF ? ["--cpu-prof", `--cpu-prof-dir=${PROF}`] : []),
      "server/main.ts",
      "serve",
      "--env-file",
      "/dev/null",
    ],
    cwd: dir,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${env.PORT}`;
  let exited = false;
  child.status.then(() => exited = true);
  for (let i = 0; i < 600; i++) {
    if (exited) throw new Error(`${dir}: the server exited before answering /health`);
    try {
      const res = await fetch(`${url}/health`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, url };
}

/** bench/baseline_server.ts query, one connection, on a table of its own. */
async function startBaseline(app: string) {
  const ns = `gucpu${crypto.randomUUID().slice(0, 8)}`;
  namespaces.push(ns);
  const table = `${ns}_baseline`;
  await admin.query(
    `CREATE TABLE ${table} (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), email text NOT NULL,
       created_at timestamptz NOT NULL DEFAULT now())`,
  );
  await admin.query(
    `INSERT INTO ${table} (email) SELECT 'user' || g || '@bench.example.com'
     FROM generate_series(1, 10000) g`,
  );
  await admin.query(`ANALYZE ${table}`);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      DEV_LOCK,
      new URL("./baseline_server.ts", import.meta.url).pathname,
      "query",
      `${DB_URL}?application_name=${app}`,
      table,
      "1",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!/listening on (\S+)/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the baseline exited before listening");
    text += value;
  }
  reader.releaseLock();
  child.stdout.cancel().catch(() => {});
  return { child, url: text.match(/listening on (\S+)/)![1] };
}

async function backends(app: string): Promise<number[]> {
  const rows = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = $1`,
    [app],
  );
  return rows.map((r) => r.pid);
}

const out: string[] = [];
try {
  for (let r = 1; r <= ROUNDS; r++) {
    for (const { label, dir } of subjects) {
      const app = `gucpu_${label}_${r}`;
      let started: Awaited<ReturnType<typeof startServer>> | undefined;
      for (let attempt = 1; !started; attempt++) {
        // A shared PostgreSQL may refuse connections for a moment (max_connections).
        started = await (dir === "baseline" ? startBaseline(app) : startServer(dir, app)).catch(
          (e) => {
            if (attempt >= 5) throw e;
            return new Promise<undefined>((r) => setTimeout(() => r(undefined), 3000));
          },
        );
      }
      const { child, url } = started;
      try {
        let token = "";
        // Refresh: one pool of tokens for the warm-up, one for the measurement (a used token
        // would be a reuse).
        const pools: string[] = [];
        if (dir !== "baseline") {
          const fx = await createFixtures(url, { users: 1, refreshPool: REFRESH ? 129 : 0 });
          if (!fx.accessToken) throw new Error(`${label}: no access token (${fx.notes})`);
          token = fx.accessToken;
          for (let i = 0; REFRESH && i < 2; i++) {
            const file = await Deno.makeTempFile({ prefix: "gucpu-refresh-" });
            await Deno.writeTextFile(file, fx.refreshTokens.slice(i * 64, i * 64 + 64).join("\n"));
            pools.push(file);
          }
        }
        const run = (durationSec: number) => {
          const pool = pools.shift() ?? "";
          return runWrk({
            name: `get_user_cpu_${label}`,
            url: token && !pool ? `${url}/user` : `${url}/`,
            script: pool ? "refresh" : token ? "getWithToken" : "get",
            args: pool ? [pool] : token ? [token, "0"] : [],
            connections: 32,
            durationSec,
          });
        };
        await run(2); // warm-up
        const pids = await backends(app);
        const s0 = await cpuUs(child.pid);
        const b0 = await Promise.all(pids.map(cpuUs));
        const res = await run(SECONDS);
        const s1 = await cpuUs(child.pid);
        const b1 = await Promise.all(pids.map(cpuUs));
        const n = res.statuses["200"] ?? 0;
        const server = (s1 - s0) / n;
        const pg = b1.reduce((a, x, i) => a + x - b0[i], 0) / n;
        const line = `${new Date().toISOString().slice(11, 19)} ${label.padEnd(8)} round ${r}: ${
          Math.round(res.rps)
        } req/s, server ${server.toFixed(1)} µs, PostgreSQL ${
          pg.toFixed(1)
        } µs (${pids.length} backends), together ${(server + pg).toFixed(1)} µs; load ${
          (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")
        }`;
        console.log(line);
        out.push(line);
      } finally {
        try {
          child.kill("SIGTERM");
        } catch { /* gone */ }
        await child.status;
      }
    }
  }
} finally {
  for (const ns of namespaces) await dropNamespace(admin, `${ns}_`);
  await admin.close();
}

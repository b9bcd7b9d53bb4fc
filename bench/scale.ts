/**
 * `deno task bench --scale`: the hot endpoints on small tables, then again
 * after loading 1,000,000 users (each with an e-mail identity and a session)
 * and 5,000,000 refresh-token rows (five per session: four revoked, one
 * live) with `INSERT ... SELECT generate_series`, plus the plan of each hot
 * statement on the large tables (EXPLAIN ANALYZE of the generic plan the
 * server's prepared statements use; writes rolled back). Everything lives in
 * its own DB_NAMESPACE, dropped at the end. Also the admin user search on the
 * loaded users: p99 of GET /admin/users?filter= by kind, and its plans
 * (bench/admin_lookup.ts; --lookups=N requests of each kind, default 100).
 *
 *   nice -n 19 deno task bench --scale [--users=1000000] [--tokens-per-session=5] [--duration=10]
 *
 * The loading connection's backend is reniced to 19 too. Writes
 * bench/results/scale-latest.json (and scale-<date>.json with --record).
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
import { cpuReading } from "./cpu.ts";
import { rotateLiveSql } from "../server/store/refresh_tokens.ts";
import { profileSql } from "../server/store/profile.ts";
import { cleanupStatements } from "../server/store/cleanup.ts";
import { measureAdminLookups } from "./admin_lookup.ts";
import { PROCESS_JWT_SECRET } from "../tests/helpers/bench_process.ts";

const arg = (name: string, dflt: number) =>
  Number(Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? dflt);
const USERS = arg("users", 1_000_000);
const TOKENS_PER_SESSION = arg("tokens-per-session", 5);
const DURATION = arg("duration", 10);
const LOOKUPS = arg("lookups", 100);
/** Rounds of measurement on each side (small tables, loaded tables), alternating. */
const ROUNDS = arg("rounds", 3);
const CONNECTIONS = 32;
const PASSWORD_CONNECTIONS = 8;
const DB_URL = Deno.env.get("BENCH_DATABASE_URL") || postgresUrl();
const RESULTS = new URL("./results/", import.meta.url);
const started = Date.now();
const log = (msg: string) =>
  console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

/**
 * One wrk run (after a 2-s warm-up unless `warm` is false), with the CPU time of server process
 * `pid` and of PostgreSQL per request: requests/s moves with the machine over minutes, CPU per
 * request less (it moves too: bench/README.md, "Scale").
 */
async function measure(
  opts: Parameters<typeof runWrk>[0],
  pid: number,
  warm = true,
): Promise<WrkResult> {
  if (warm) await runWrk({ ...opts, durationSec: 2 });
  const reading = cpuReading(pid);
  const r = await runWrk({ ...opts, durationSec: DURATION });
  let cpu = "";
  if (r.requests > 0) {
    const c = reading(r.requests);
    r.serverCpuUsPerRequest = c.serverUs;
    r.postgresCpuUsPerRequest = c.postgresUs;
    cpu = `  CPU/request: server ${c.serverUs} µs, PostgreSQL ${c.postgresUs} µs`;
  }
  log(
    `${r.name.padEnd(28)} ${
      String(r.rps).padStart(8)
    } req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms${cpu}`,
  );
  return r;
}

export async function scaleMain(): Promise<number> {
  const machine = await machineInfo();
  log(`machine: ${machine.cores} cores, load ${machine.loadavg.join(" ")}`);
  // Before minutes of loading: a fresh machine has no wrk yet.
  await ensureWrk();
  const sql = postgres(DB_URL, { max: 1, onnotice: () => {} });
  const ns = randomNamespace("scale");
  const out: Record<string, unknown> = { date: new Date().toISOString(), users: USERS };
  const results: Record<string, WrkResult> = {};
  const timings: Record<string, number> = {};
  const plans: Record<string, string> = {};
  const env = {
    DATABASE_URL: DB_URL,
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "1000000000/1h",
    AUTHSVC_RATE_LIMIT_SIGNUP: "1000000000/1h",
    // The loaded rows are alive; no background cleanup during the measurements.
    AUTHSVC_CLEANUP_INTERVAL: "0",
    LOG_LEVEL: "error",
  };
  const POOL = CONNECTIONS * 2;
  /** A namespace with its two servers, fixture users and one pool of refresh tokens per round. */
  const startSide = async (tag: string, namespace: string): Promise<Side> => {
    const srv = await startServerProcess({ ...env, AUTHSVC_DB_NAMESPACE: namespace });
    const cold = await startServerProcess({
      ...env,
      AUTHSVC_DB_NAMESPACE: namespace,
      AUTHSVC_API_USER_CACHE_SIZE: "0",
    });
    const dir = await Deno.makeTempDir({ prefix: `authsvc-scale-${tag}-` });
    const side: Side = {
      tag,
      prefix: `${namespace}_`,
      srv,
      cold,
      dir,
      accessToken: "",
      password: "",
      usersFile: "",
      pools: [],
    };
    // A pool per round, and one for the warm-up below.
    const fx = await createFixtures(srv.url, { users: 16, refreshPool: (ROUNDS + 1) * POOL + 1 });
    if (!fx.accessToken || fx.refreshTokens.length < (ROUNDS + 1) * POOL) {
      throw new Error(`fixtures failed: ${fx.notes.join("; ")}`);
    }
    side.accessToken = fx.accessToken;
    side.password = fx.password;
    side.usersFile = `${dir}/users.txt`;
    await Deno.writeTextFile(side.usersFile, fx.emails.join("\n") + "\n");
    for (let r = 0; r <= ROUNDS; r++) {
      const file = `${dir}/refresh${r}.txt`;
      await Deno.writeTextFile(
        file,
        fx.refreshTokens.slice(r * POOL, (r + 1) * POOL).join("\n") + "\n",
      );
      side.pools.push(file);
    }
    log(`${tag}: servers ${srv.url} and ${cold.url} (nothing kept), namespace ${namespace}`);
    return side;
  };
  const round = async (side: Side, r: number) => {
    const name = (what: string) => `${side.tag}_${what}_${r + 1}`;
    results[name("get_user")] = await measure({
      name: name("get_user"),
      url: `${side.srv.url}/user`,
      script: "getWithToken",
      args: [side.accessToken, "0"],
      connections: CONNECTIONS,
      durationSec: DURATION,
    }, side.srv.pid);
    results[name("get_user_uncached")] = await measure({
      name: name("get_user_uncached"),
      url: `${side.cold.url}/user`,
      script: "getWithToken",
      args: [side.accessToken, "0"],
      connections: CONNECTIONS,
      durationSec: DURATION,
    }, side.cold.pid);
    results[name("refresh_token")] = await measure(
      {
        name: name("refresh_token"),
        url: `${side.srv.url}/`,
        script: "refresh",
        args: [side.pools[r]],
        connections: CONNECTIONS,
        durationSec: DURATION,
      },
      side.srv.pid,
      false,
    );
    results[name("password")] = await measure({
      name: name("password"),
      url: `${side.srv.url}/`,
      script: "password",
      args: [side.usersFile, side.password, "0"],
      connections: PASSWORD_CONNECTIONS,
      durationSec: DURATION,
      timeoutSec: 30,
    }, side.srv.pid);
  };
  const sides: Side[] = [];
  try {
    const [{ pid }] = await sql.unsafe(`SELECT pg_backend_pid() AS pid`);
    await new Deno.Command("renice", { args: ["-n", "19", "-p", String(pid)] }).output()
      .catch(() => {});
    // Two namespaces, each with its own pair of servers (kept answers, nothing kept): the small
    // tables and the loaded ones, measured in alternating rounds so that the machine's drift
    // over the run falls on both sides alike.
    sides.push(await startSide("small", ns), await startSide("large", `${ns}l`));
    // An unmeasured refresh run on each side first. Without it the small side's statistics
    // (taken below, with autovacuum off on the bench's PostgreSQL) would describe a table of
    // about 200 tokens: the plans cached then scan refresh_tokens and users sequentially, and
    // stay so while a round grows the table by thousands of rows, which made the small side
    // the slower one (EXPLAIN of the generic plan; bench/README.md, "Scale").
    for (const side of sides) {
      await runWrk({
        name: `${side.tag}_refresh_warm_up`,
        url: `${side.srv.url}/`,
        script: "refresh",
        args: [side.pools[ROUNDS]],
        connections: CONNECTIONS,
        durationSec: 2,
      });
    }
    const large = sides[1];
    const p = large.prefix;

    // Load. Users and identities in one transaction: the identities trigger then takes no second
    // revision (migrations/0009_profile_rev.sql), as a sign-up does.
    const t0 = Date.now();
    await sql.begin(async (tx) => {
      await tx.unsafe(
        `INSERT INTO ${p}users (email, encrypted_password, email_confirmed_at, raw_app_meta_data,
           phone, raw_user_meta_data, created_at, updated_at)
         SELECT 'scale-' || g || '@scale.example.com',
           (SELECT encrypted_password FROM ${p}users WHERE encrypted_password IS NOT NULL LIMIT 1),
           now(), '{"provider":"email","providers":["email"]}',
           (15550000000 + g)::text, jsonb_build_object('full_name', 'Person ' || g || ' Scale'),
           now() - g * interval '1 second', now() - g * interval '1 second'
         FROM generate_series(1, ${USERS}) g`,
      );
      await tx.unsafe(
        `INSERT INTO ${p}identities (user_id, provider, provider_id, identity_data, email,
           created_at, updated_at)
         SELECT id, 'email', id::text,
           jsonb_build_object('sub', id::text, 'email', email, 'email_verified', true), email,
           created_at, created_at
         FROM ${p}users WHERE email LIKE 'scale-%'`,
      );
    });
    timings.usersAndIdentitiesSec = (Date.now() - t0) / 1000;
    log(`loaded ${USERS} users and identities in ${timings.usersAndIdentitiesSec} s`);
    const t1 = Date.now();
    await sql.unsafe(
      `INSERT INTO ${p}sessions (user_id, aal, amr, created_at, updated_at, refreshed_at)
       SELECT id, 'aal1', '[{"method":"password","timestamp":1764000000}]', created_at, now(), now()
       FROM ${p}users WHERE email LIKE 'scale-%'`,
    );
    timings.sessionsSec = (Date.now() - t1) / 1000;
    log(`loaded ${USERS} sessions in ${timings.sessionsSec} s`);
    const t2 = Date.now();
    // Per session: tokens 1..n-1 revoked (within the last 12 hours: not yet dead), n live.
    // Their keys as the server stores them (auth/refresh_token_format.ts): the time of issue
    // in milliseconds (12 hex digits), then 64 hex digits standing for the token's SHA-256.
    await sql.unsafe(
      `INSERT INTO ${p}refresh_tokens (token_hash, user_id, session_id, parent_id, revoked,
         created_at, updated_at)
       SELECT lpad(to_hex((extract(epoch FROM x.at) * 1000)::bigint), 12, '0')
           || md5(s.id::text || g) || md5(g || s.id::text),
         s.user_id, s.id, NULL, g < ${TOKENS_PER_SESSION}, x.at, x.at
       FROM ${p}sessions s JOIN ${p}users u ON u.id = s.user_id AND u.email LIKE 'scale-%',
         generate_series(1, ${TOKENS_PER_SESSION}) g,
         LATERAL (SELECT now() - interval '12 hours' + g * interval '1 minute' AS at) x`,
    );
    timings.refreshTokensSec = (Date.now() - t2) / 1000;
    log(`loaded ${USERS * TOKENS_PER_SESSION} refresh tokens in ${timings.refreshTokensSec} s`);
    const t3 = Date.now();
    for (const side of sides) {
      for (const t of ["users", "identities", "sessions", "refresh_tokens", "mfa_factors"]) {
        await sql.unsafe(`VACUUM ANALYZE ${side.prefix}${t}`);
      }
    }
    timings.vacuumAnalyzeSec = (Date.now() - t3) / 1000;
    const [sizes] = await sql.unsafe(
      `SELECT (SELECT count(*) FROM ${p}users)::int AS users,
         (SELECT count(*) FROM ${p}refresh_tokens)::int AS refresh_tokens,
         pg_size_pretty(pg_total_relation_size('${p}users')) AS users_size,
         pg_size_pretty(pg_total_relation_size('${p}refresh_tokens')) AS refresh_tokens_size,
         pg_size_pretty(pg_total_relation_size('${p}identities')) AS identities_size,
         pg_size_pretty(pg_total_relation_size('${p}sessions')) AS sessions_size`,
    );
    out.sizes = sizes;
    log(`sizes: ${JSON.stringify(sizes)}`);

    for (let r = 0; r < ROUNDS; r++) {
      // small, large, then large, small: each side goes first as often as the other.
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) await round(side, r);
    }

    if (LOOKUPS > 0) {
      const lookups = await measureAdminLookups({
        sql: (text, params) => sql.unsafe(text, params as string[]),
        prefix: p,
        baseUrl: large.srv.url,
        jwtSecret: PROCESS_JWT_SECRET,
        users: USERS,
        perKind: LOOKUPS,
      });
      out.adminLookups = lookups;
      for (const [k, v] of Object.entries(lookups.latency)) {
        log(`GET /admin/users?filter= ${k.padEnd(22)} p50 ${v.p50} ms  p99 ${v.p99} ms  (${v.n})`);
      }
      for (const [k, plan] of Object.entries(lookups.plans)) log(`plan of ${k}:\n${plan}`);
      log(`admin lookups: ${lookups.noSeqScan ? "no" : "A"} sequential scan of users`);
    }

    {
      // The plans, as the server's prepared statements run them (generic plans).
      const [sample] = await sql.unsafe(
        `SELECT u.id::text AS user_id, u.email, s.id::text AS session_id, r.token_hash
         FROM ${p}users u JOIN ${p}sessions s ON s.user_id = u.id
         JOIN ${p}refresh_tokens r ON r.session_id = s.id AND NOT r.revoked
         WHERE u.email = 'scale-${Math.floor(USERS / 2)}@scale.example.com'`,
      );
      const t = { t: (n: string) => `${p}${n}` };
      const statements: Record<string, [string, unknown[]]> = {
        // server/store/profile.ts: GET /user's one lookup (a kept answer's revision check), and
        // the four-table read it builds the answer from when nothing is kept.
        get_user: [profileSql(t).revision, [sample.user_id, sample.session_id]],
        get_user_full: [profileSql(t).full, [sample.user_id, sample.session_id]],
        // server/auth/users.ts findByEmail: the password grant's lookup.
        password_find_by_email: [
          `SELECT * FROM ${p}users WHERE email = $1 AND deleted_at IS NULL`,
          [sample.email],
        ],
        // server/store/refresh_tokens.ts rotateLive: the refresh grant.
        refresh_rotate_live: [
          rotateLiveSql(t),
          [sample.token_hash, "scale-explain-child", new Date(), 0, 0, "{}", ""],
        ],
        // server/store/cleanup.ts: one batch of revoked refresh tokens (cutoff: a day ago).
        cleanup_refresh_tokens: [
          cleanupStatements((n) => `${p}${n}`).refresh_tokens,
          [new Date(Date.now() - 86400_000), 100],
        ],
      };
      for (const [name, [text, params]] of Object.entries(statements)) {
        await sql.begin(async (tx) => {
          await tx.unsafe(`SET LOCAL plan_cache_mode = force_generic_plan`);
          await tx.unsafe(`PREPARE scale_${name} AS ${text}`);
          const args = params.map((v) =>
            v instanceof Date ? `'${v.toISOString()}'` : `'${String(v).replaceAll("'", "''")}'`
          );
          const rows = await tx.unsafe(
            `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) EXECUTE scale_${name}(${args.join(", ")})`,
          );
          plans[name] = rows.map((r) => r["QUERY PLAN"]).join("\n");
          await tx.unsafe(`DEALLOCATE scale_${name}`);
          // Nothing the explained writes did stays.
          throw new RollBack();
        }).catch((e) => {
          if (!(e instanceof RollBack)) throw e;
        });
        log(`plan of ${name}:\n${plans[name]}`);
      }
    }
  } finally {
    for (const side of sides) {
      await side.srv.stop();
      await side.cold.stop();
      await Deno.remove(side.dir, { recursive: true }).catch(() => {});
    }
    const t4 = Date.now();
    for (const prefix of [`${ns}_`, `${ns}l_`]) {
      await dropNamespaceObjects((text, params) => sql.unsafe(text, params as string[]), prefix);
    }
    timings.dropSec = (Date.now() - t4) / 1000;
    await sql.end({ timeout: 5 });
  }
  const median = (xs: number[]) => {
    const v = [...xs].sort((a, b) => a - b);
    return v.length
      ? (v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2)
      : NaN;
  };
  const rpsOf = (tag: string, a: string) =>
    Array.from({ length: ROUNDS }, (_, r) => results[`${tag}_${a}_${r + 1}`]?.rps)
      .filter((x): x is number => typeof x === "number");
  const ratio = (a: string) => {
    const s = median(rpsOf("small", a)), l = median(rpsOf("large", a));
    return s && l ? Math.round((l / s) * 1000) / 1000 : null;
  };
  out.medians = Object.fromEntries(
    ["get_user", "get_user_uncached", "refresh_token", "password"].flatMap((k) => [
      [`small_${k}`, median(rpsOf("small", k))],
      [`large_${k}`, median(rpsOf("large", k))],
    ]),
  );
  // Each round's large / small, for the spread.
  out.roundRatios = Object.fromEntries(
    ["get_user", "get_user_uncached", "refresh_token", "password"].map((k) => {
      const s = rpsOf("small", k), l = rpsOf("large", k);
      return [k, l.map((x, i) => Math.round((x / s[i]) * 1000) / 1000)];
    }),
  );
  // CPU per request (server process and PostgreSQL) by side, the median of the rounds, and large
  // ÷ small of their sum: how much more work a request is on the loaded tables, whatever the
  // machine's speed did between rounds.
  const cpuOf = (tag: string, a: string, f: (r: WrkResult) => number | undefined) =>
    median(
      Array.from({ length: ROUNDS }, (_, r) => results[`${tag}_${a}_${r + 1}`])
        .map((r) => r && f(r)).filter((x): x is number => typeof x === "number"),
    );
  const endpoints = ["get_user", "get_user_uncached", "refresh_token", "password"];
  out.cpuMediansUs = Object.fromEntries(
    endpoints.flatMap((k) =>
      ["small", "large"].map((tag) => [`${tag}_${k}`, {
        server: cpuOf(tag, k, (r) => r.serverCpuUsPerRequest),
        postgres: cpuOf(tag, k, (r) => r.postgresCpuUsPerRequest),
      }])
    ),
  );
  out.cpuLargeVsSmall = Object.fromEntries(endpoints.map((k) => {
    const sum = (r: WrkResult) =>
      r.serverCpuUsPerRequest === undefined || r.postgresCpuUsPerRequest === undefined
        ? undefined
        : r.serverCpuUsPerRequest + r.postgresCpuUsPerRequest;
    const s = cpuOf("small", k, sum), l = cpuOf("large", k, sum);
    return [k, s && l ? Math.round((l / s) * 1000) / 1000 : null];
  }));
  out.machine = { ...machine, loadavgAfter: Deno.loadavg() };
  out.timings = timings;
  out.results = results;
  out.rounds = ROUNDS;
  out.largeVsSmall = Object.fromEntries(
    ["get_user", "get_user_uncached", "refresh_token", "password"].map((k) => [k, ratio(k)]),
  );
  out.plans = plans;
  out.totalSec = Math.round((Date.now() - started) / 1000);
  await Deno.mkdir(RESULTS, { recursive: true });
  const json = JSON.stringify(out, null, 2) + "\n";
  await Deno.writeTextFile(new URL("scale-latest.json", RESULTS), json);
  if (Deno.args.includes("--record")) {
    await Deno.writeTextFile(new URL(`scale-${String(out.date).slice(0, 10)}.json`, RESULTS), json);
  }
  console.log("large / small:", JSON.stringify(out.largeVsSmall));
  console.log("CPU per request, large / small:", JSON.stringify(out.cpuLargeVsSmall));
  log("done; results in bench/results/scale-latest.json");
  return 0;
}

class RollBack extends Error {}

interface Side {
  tag: string;
  prefix: string;
  srv: Awaited<ReturnType<typeof startServerProcess>>;
  cold: Awaited<ReturnType<typeof startServerProcess>>;
  dir: string;
  accessToken: string;
  password: string;
  usersFile: string;
  pools: string[];
}

if (import.meta.main) Deno.exit(await scaleMain());

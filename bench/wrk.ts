/**
 * The load generator: wrk (Debian's package), driven with Lua scripts.
 *
 * Why wrk: it is a C event loop that needs a small fraction of one core for
 * tens of thousands of requests per second, so on this 2-core machine it
 * leaves the CPU to the server being measured (autocannon runs in Node and
 * would take a core of its own at these rates). Its Lua hooks give per-request
 * bodies (a fresh refresh token, a unique sign-up address), read responses
 * (the rotated refresh token goes back into the pool), pace a client with
 * `delay()`, and report exact percentiles from its latency histogram.
 */

/** One measured run. */
export interface WrkResult {
  name: string;
  connections: number;
  durationSec: number;
  requests: number;
  /** Requests per second that answered 2xx/3xx. */
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
  errors: { connect: number; read: number; write: number; timeout: number; status: number };
  /** Responses by HTTP status (from the script's response hook). */
  statuses: Record<string, number>;
  /**
   * CPU time (user + system, /proc/<pid>/stat) of the measured server process per request, in
   * µs, where the bench knows its process (the refresh runs).
   */
  serverCpuUsPerRequest?: number;
  /** The same, per thread name (the event loop is "deno"; bcrypt workers have their own). */
  serverThreadCpuUsPerRequest?: Record<string, number>;
  /** The same for every PostgreSQL process on the machine (other clients' work included). */
  postgresCpuUsPerRequest?: number;
}

/** Makes sure wrk is installed: apt-get install when missing (the machine's user is root). */
export async function ensureWrk(): Promise<string> {
  const found = await which("wrk");
  if (found) return found;
  console.log("wrk is missing: installing Debian's package (apt-get install wrk)");
  for (const args of [["update", "-qq"], ["install", "-y", "-qq", "wrk"]]) {
    const out = await new Deno.Command("apt-get", {
      args,
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdout: "piped",
      stderr: "piped",
    }).output().catch((e) => {
      throw new Error(`apt-get is not available (${e.message}); install wrk by hand`);
    });
    if (!out.success) {
      throw new Error(
        `apt-get ${args.join(" ")} failed (root needed):\n${new TextDecoder().decode(out.stderr)}`,
      );
    }
  }
  const path = await which("wrk");
  if (!path) throw new Error("wrk still missing after apt-get install");
  return path;
}

async function which(cmd: string): Promise<string | null> {
  for (const dir of (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")) {
    try {
      const p = `${dir}/${cmd}`;
      const st = await Deno.stat(p);
      if (st.isFile) return p;
    } catch { /* not here */ }
  }
  return null;
}

/**
 * Lua shared by every script: each thread counts answers by status in a
 * global table; done() (in the main Lua state) collects them with
 * thread:get() and prints one JSON report line.
 */
const REPORT_LUA = `
statuses = {}
local function count_status(status)
  statuses[status] = (statuses[status] or 0) + 1
end
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
done = function(summary, latency, requests)
  local e = summary.errors
  local parts = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses") or {}
    for k, v in pairs(s) do parts[#parts + 1] = string.format('"%s":%d', tostring(k), v) end
  end
  io.write(string.format(
    '\\nWRK_JSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d,"statuses":{%s}}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max,
    table.concat(parts, ",")))
end
`;

/** Script bodies by kind. Arguments arrive in init(args). */
export const SCRIPTS = {
  /** GET with a bearer token; args: token, delayMs. */
  getWithToken: `
local token, pause = nil, 0
init = function(args)
  token = args[1]; pause = tonumber(args[2]) or 0
  wrk.headers["Authorization"] = "Bearer " .. token
end
delay = function() return pause end
response = function(status, headers, body)
  count_status(status)
end
`,
  /** Plain GET. */
  get: `
response = function(status, headers, body)
  count_status(status)
end
`,
  /**
   * The refresh_token grant over a pool of live tokens (one per line in the
   * file args[1]). Each request takes the oldest token; a 200 answer's
   * rotated token joins the back of the pool, so every request is a real
   * exchange of a token never used before. An empty pool sends a token that
   * does not exist (counted as a 400, never silently).
   */
  refresh: `
local pool, head, tail = {}, 1, 0
init = function(args)
  for line in io.lines(args[1]) do
    if #line > 0 then tail = tail + 1; pool[tail] = line end
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
request = function()
  local t = "pool-was-empty"
  if head <= tail then t = pool[head]; pool[head] = nil; head = head + 1 end
  return wrk.format("POST", "/token?grant_type=refresh_token", nil, '{"refresh_token":"' .. t .. '"}')
end
response = function(status, headers, body)
  count_status(status)
  if status == 200 then
    local t = body:match('"refresh_token"%s*:%s*"([^"]+)"')
    if t then tail = tail + 1; pool[tail] = t end
  end
end
`,
  /** The password grant over users listed in args[1] (one e-mail a line), password args[2]; delay args[3]. */
  password: `
local users, n, i = {}, 0, 0
local password, pause = "", 0
init = function(args)
  for line in io.lines(args[1]) do
    if #line > 0 then n = n + 1; users[n] = line end
  end
  password = args[2]; pause = tonumber(args[3]) or 0
  wrk.headers["Content-Type"] = "application/json"
end
delay = function() return pause end
request = function()
  i = i % n + 1
  return wrk.format("POST", "/token?grant_type=password", nil,
    '{"email":"' .. users[i] .. '","password":"' .. password .. '"}')
end
response = function(status, headers, body)
  count_status(status)
end
`,
  /** Sign-ups of unique addresses: args[1] a run prefix, args[2] the password. */
  signup: `
local prefix, password, counter = "", "", 0
init = function(args)
  -- a fresh random id per thread and run (the warm-up must not reuse the measured run's addresses)
  local f = io.open("/proc/sys/kernel/random/uuid", "r")
  prefix = args[1] .. "-" .. f:read("*l"):sub(1, 13)
  f:close()
  password = args[2]
  wrk.headers["Content-Type"] = "application/json"
end
request = function()
  counter = counter + 1
  return wrk.format("POST", "/signup", nil,
    '{"email":"' .. prefix .. "-" .. counter .. '@bench.example.com","password":"' .. password .. '"}')
end
response = function(status, headers, body)
  count_status(status)
end
`,
} as const;

/** Options of one wrk run. */
export interface WrkRun {
  name: string;
  url: string;
  script: keyof typeof SCRIPTS;
  args?: string[];
  connections: number;
  durationSec: number;
  threads?: number;
  /** Request timeout in seconds (wrk's default is 2 s; bcrypt queues need more). */
  timeoutSec?: number;
}

/** Runs wrk once and parses its report. */
export async function runWrk(opts: WrkRun): Promise<WrkResult> {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-wrk-" });
  try {
    const scriptPath = `${dir}/script.lua`;
    await Deno.writeTextFile(scriptPath, REPORT_LUA + SCRIPTS[opts.script]);
    const args = [
      "-t",
      String(opts.threads ?? 1),
      "-c",
      String(opts.connections),
      "-d",
      `${opts.durationSec}s`,
      "--timeout",
      `${opts.timeoutSec ?? 10}s`,
      "-s",
      scriptPath,
      opts.url,
      "--",
      ...(opts.args ?? []),
    ];
    const out = await new Deno.Command("wrk", { args, stdout: "piped", stderr: "piped" }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    const m = /WRK_JSON (\{.*\})/.exec(text);
    if (!out.success || !m) throw new Error(`wrk failed for ${opts.name}:\n${text}`);
    const r = JSON.parse(m[1]);
    const statuses: Record<string, number> = r.statuses;
    const durationSec = r.duration_us / 1e6;
    const bad = r.status + r.connect + r.read + r.write + r.timeout;
    return {
      name: opts.name,
      connections: opts.connections,
      durationSec: round(durationSec, 2),
      requests: r.requests,
      rps: round(Math.max(0, r.requests - bad) / durationSec, 1),
      p50Ms: round(r.p50_us / 1000, 2),
      p90Ms: round(r.p90_us / 1000, 2),
      p99Ms: round(r.p99_us / 1000, 2),
      meanMs: round(r.mean_us / 1000, 2),
      maxMs: round(r.max_us / 1000, 2),
      errors: {
        connect: r.connect,
        read: r.read,
        write: r.write,
        timeout: r.timeout,
        status: r.status,
      },
      statuses,
    };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

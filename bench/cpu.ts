/**
 * CPU time of the server under test and of PostgreSQL, read from /proc
 * (Linux; 0 elsewhere): requests/s moves with a shared machine's speed, CPU
 * per request less (bench/run.ts, bench/scale.ts; bench/README.md, "Scale").
 */

/** utime + stime in clock ticks (1/100 s) of one process, from /proc/<pid>/stat; 0 when gone. */
export function cpuTicks(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
}

/** utime + stime in clock ticks of each thread of one process, summed by thread name. */
function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const e of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const stat = Deno.readTextFileSync(`/proc/${pid}/task/${e.name}/stat`);
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        out.set(name, (out.get(name) ?? 0) + Number(f[11]) + Number(f[12]));
      } catch { /* the thread ended */ }
    }
  } catch { /* the process ended */ }
  return out;
}

/** utime + stime of each PostgreSQL process on the machine, in clock ticks, by process id. */
export function postgresTicks(): Map<number, number> {
  const out = new Map<number, number>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      if (stat.includes("(postgres)")) out.set(Number(e.name), cpuTicks(Number(e.name)));
    } catch { /* the process ended */ }
  }
  return out;
}

/**
 * PostgreSQL's CPU ticks between two readings: over the processes alive at the second, each
 * from its first reading (0 when it started in between). A backend that exited in between (a
 * stopped process's connections) takes its ticks with it: those are left out, instead of
 * subtracting its whole life from the sum as a difference of two totals did.
 */
export function postgresTicksSince(before: Map<number, number>): number {
  let t = 0;
  for (const [pid, ticks] of postgresTicks()) t += ticks - (before.get(pid) ?? 0);
  return t;
}

/** CPU per request of one server process and of PostgreSQL, in µs. */
export interface CpuPerRequest {
  serverUs: number;
  postgresUs: number;
  /** The server's threads by name (those with any time). */
  threadsUs: Record<string, number>;
}

/**
 * Starts reading the CPU time of server process `pid` and of PostgreSQL; the
 * function it returns gives each per request over the `requests` served since.
 */
export function cpuReading(pid: number): (requests: number) => CpuPerRequest {
  const cpu0 = cpuTicks(pid);
  const threads0 = threadTicks(pid);
  const pg0 = postgresTicks();
  return (requests) => {
    // a tick is 1/100 s: 10,000 µs; one decimal
    const perRequest = (ticks: number) => Math.round((ticks * 10_000 * 10) / requests) / 10;
    const threadsUs: Record<string, number> = {};
    for (const [name, t] of threadTicks(pid)) {
      const us = perRequest(t - (threads0.get(name) ?? 0));
      if (us > 0) threadsUs[name] = us;
    }
    return {
      serverUs: perRequest(cpuTicks(pid) - cpu0),
      postgresUs: perRequest(postgresTicksSince(pg0)),
      threadsUs,
    };
  };
}

/** What the figures were measured on. */

/** The machine and its load at the time of a run. */
export interface MachineInfo {
  cores: number;
  memoryGiB: number;
  deno: string;
  v8: string;
  os: string;
  cpuModel: string;
  loadavg: number[];
  uptime: string;
  postgres: string;
}

/** Reads nproc, memory, versions, CPU model and `uptime`. */
export async function machineInfo(): Promise<MachineInfo> {
  const mem = Deno.systemMemoryInfo();
  let cpuModel = "";
  try {
    cpuModel = /model name\s*:\s*(.+)/.exec(await Deno.readTextFile("/proc/cpuinfo"))?.[1] ?? "";
  } catch { /* not Linux */ }
  return {
    cores: navigator.hardwareConcurrency,
    memoryGiB: Math.round(mem.total / 2 ** 30 * 10) / 10,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    os: `${Deno.build.os} ${Deno.osRelease()}`,
    cpuModel,
    loadavg: Deno.loadavg(),
    uptime: await run("uptime"),
    postgres: await run("psql", ["--version"]),
  };
}

async function run(cmd: string, args: string[] = []): Promise<string> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "null" }).output();
    return new TextDecoder().decode(out.stdout).trim();
  } catch {
    return "";
  }
}

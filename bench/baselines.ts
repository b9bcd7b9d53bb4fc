/** Starts bench/baseline_server.ts as its own process and waits for its address. */

/** A running baseline process. */
export interface Baseline {
  url: string;
  /** The process id (for its CPU time). */
  pid: number;
  stop(): Promise<void>;
}

/**
 * The lockfile a bench process runs with: deno.json's (deno.lock) holds the
 * server's packages alone, postgres.js and the rest are in deno.dev.lock
 * (scripts/lock.ts).
 */
export const DEV_LOCK = `--lock=${new URL("../deno.dev.lock", import.meta.url).pathname}`;

/** Spawns `deno run -A --lock=deno.dev.lock bench/<script> <args>` (default script: baseline_server.ts). */
export async function startBaseline(
  args: string[],
  script = "./baseline_server.ts",
): Promise<Baseline> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", DEV_LOCK, new URL(script, import.meta.url).pathname, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let url = "";
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`baseline ${args[0]} exited before listening: ${seen}`);
    seen += value;
    url = /listening on (http:\/\/\S+)/.exec(seen)?.[1] ?? "";
  }
  // keep draining so the child never blocks on a full pipe
  const drained = (async () => {
    try {
      while (!(await reader.read()).done) { /* discard */ }
    } catch { /* closed */ }
  })();
  return {
    url,
    pid: child.pid,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      const t = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
      }, 5000);
      await child.status;
      clearTimeout(t);
      await drained;
    },
  };
}

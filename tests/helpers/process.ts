/**
 * Starts the real server as a separate PROCESS (`deno run -P=server
 * server/main.ts serve`, the permissions `deno task start` uses), waits until
 * GET /health answers 200, and hands back its URL, its output and stop().
 *
 *   const p = await startServerProcess({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
 *   await fetch(`${p.url}/health`);
 *   const code = await p.stop(); // SIGTERM, waits for the exit
 *
 * The child gets a clean environment: PATH/HOME/DENO_DIR, BASE_ENV of
 * server.ts, a fresh DB_NAMESPACE, a free port on 127.0.0.1, `--env-file
 * /dev/null` (a developer's ./.env never leaks in), then `env` (wins). With no
 * DATABASE_URL in `env` it runs on an in-memory PGlite of its own.
 */
import { BASE_ENV, freshNamespace } from "./server.ts";
import { lostPortRace } from "./bench_process.ts";

const ROOT = new URL("../../", import.meta.url);

/** A running server process. */
export interface ServerProcess {
  url: string;
  port: number;
  /** The environment the child got (incl. the namespace it uses). */
  env: Record<string, string>;
  /** Lines the child wrote so far. */
  stdout: string[];
  stderr: string[];
  /** Sends `signal` (default SIGTERM) and resolves with the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
  /** Resolves with the exit code whenever the child exits. */
  exited: Promise<number>;
}

/** Options of startServerProcess. */
export interface ProcessOptions {
  /** Arguments after `server/main.ts` (default ["serve"]). */
  args?: string[];
  /** `-A` instead of `-P=server`. */
  allowAll?: boolean;
  /** How long to wait for /health (default 60 s). */
  timeoutMs?: number;
  /** Skip waiting for /health (e.g. for commands that exit). */
  noWait?: boolean;
}

/** A port that was free a moment ago. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function pump(stream: ReadableStream<Uint8Array>, into: string[]): Promise<void> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    rest += chunk;
    const lines = rest.split("\n");
    rest = lines.pop()!;
    into.push(...lines);
  }
  if (rest) into.push(rest);
}

/** The environment a child starts from. */
export function processEnv(env: Record<string, string> = {}): Record<string, string> {
  const keep: Record<string, string> = {};
  for (const k of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) keep[k] = v;
  }
  return {
    ...keep,
    ...BASE_ENV,
    LOG_LEVEL: "info",
    AUTHSVC_API_HOST: "127.0.0.1",
    AUTHSVC_DB_DATA_DIR: "memory://",
    AUTHSVC_DB_NAMESPACE: freshNamespace(),
    PORT: String(freePort()),
    ...env,
  };
}

/** Runs `deno run <perm> server/main.ts <args>` to completion (migrate, version, --help). */
export async function runServerCommand(
  args: string[],
  env: Record<string, string> = {},
  opts: { allowAll?: boolean; cwd?: string | URL; unset?: string[]; stdin?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const childEnv = processEnv(env);
  for (const name of opts.unset ?? []) delete childEnv[name];
  // a developer's ./.env never leaks in, unless the test names a file
  const envArgs = args.some((a) => a.startsWith("--env-file")) ? [] : ["--env-file", "/dev/null"];
  const main = new URL("server/main.ts", ROOT).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      opts.allowAll ? "-A" : "-P=server",
      "--config",
      new URL("deno.json", ROOT).pathname,
      main,
      ...args,
      ...envArgs,
    ],
    cwd: opts.cwd ?? ROOT,
    env: childEnv,
    clearEnv: true,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * Starts a server process and waits for /health. When the port was picked
 * here (no PORT in `env`), another process may take it between freePort()
 * and the server's listen: a start that fails with AddrInUse is tried again
 * on a new port (a test must not fail on a race with its neighbours).
 */
export async function startServerProcess(
  env: Record<string, string> = {},
  opts: ProcessOptions = {},
): Promise<ServerProcess> {
  for (let attempt = 1;; attempt++) {
    try {
      return await startOnce(processEnv(env), opts);
    } catch (e) {
      const lost = lostPortRace(e);
      if (!lost || env.PORT !== undefined || opts.noWait || attempt >= 5) throw e;
    }
  }
}

async function startOnce(
  childEnv: Record<string, string>,
  opts: ProcessOptions,
): Promise<ServerProcess> {
  const args = opts.args ?? ["serve"];
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      opts.allowAll ? "-A" : "-P=server",
      "server/main.ts",
      ...args,
      "--env-file",
      "/dev/null",
    ],
    cwd: ROOT,
    env: childEnv,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout: string[] = [];
  const stderr: string[] = [];
  const pumps = Promise.all([pump(child.stdout, stdout), pump(child.stderr, stderr)]);
  const exited = child.status.then(async (s) => {
    await pumps;
    return s.code;
  });
  let done = false;
  exited.finally(() => done = true);
  const port = Number(childEnv.PORT);
  const url = `http://127.0.0.1:${port}`;

  const stop = async (signal: Deno.Signal = "SIGTERM") => {
    if (!done) {
      try {
        child.kill(signal);
      } catch { /* already gone */ }
    }
    return await exited;
  };

  if (!opts.noWait) {
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    for (;;) {
      if (done) {
        throw new Error(
          `server process exited with ${await exited} before /health answered:\n${
            stderr.join("\n")
          }\n${stdout.slice(-20).join("\n")}`,
        );
      }
      try {
        const res = await fetch(`${url}/health`);
        await res.body?.cancel();
        if (res.status === 200) break;
      } catch { /* not listening yet */ }
      if (Date.now() > deadline) {
        await stop("SIGKILL");
        throw new Error(`server process did not answer /health in time:\n${stderr.join("\n")}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, port, env: childEnv, stdout, stderr, stop, exited };
}

/**
 * Starts the real server as a separate process (`deno run -P=server
 * server/main.ts serve`), the way an operator runs it, for benchmarks and the
 * reliability suites that need a process boundary (two processes on one
 * database, a database cut under a running server).
 *
 *   const srv = await startServerProcess({ DATABASE_URL: url, AUTHSVC_DB_NAMESPACE: "b1" });
 *   await fetch(`${srv.url}/health`);
 *   await srv.stop();
 *
 * The child gets only the settings passed here (plus PATH, HOME and DENO_DIR),
 * listens on 127.0.0.1 on a free port picked here and is ready when
 * `GET /health` answers 200. Its output is drained continuously (the last
 * lines are kept for error messages), so a chatty server never blocks on a
 * full pipe.
 */

/** The JWT secret server processes started here use. */
export const PROCESS_JWT_SECRET = "bench-secret-that-is-long-enough-for-hs256-0123456789";

/** The PostgreSQL server the benches and reliability suites use. */
export function postgresUrl(): string {
  return Deno.env.get("DATABASE_URL") || "postgres://postgres@127.0.0.1:5432/test";
}

/**
 * Drops every table (their sequences and triggers go with them) and function
 * whose name starts with `prefix` ("<ns>_") in the current schema, through
 * `run` (any driver's query function).
 */
export async function dropNamespaceObjects(
  run: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>,
  prefix: string,
): Promise<void> {
  if (!prefix) return;
  const like = `${prefix.replaceAll("_", "\\_")}%`;
  const tables = await run(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE $1`,
    [like],
  );
  if (tables.length) {
    await run(`DROP TABLE IF EXISTS ${tables.map((t) => `"${t.name}"`).join(", ")} CASCADE`);
  }
  const functions = await run(
    `SELECT p.oid::regprocedure::text AS name FROM pg_proc p
     JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = current_schema() AND p.proname LIKE $1`,
    [like],
  );
  if (functions.length) {
    await run(`DROP FUNCTION IF EXISTS ${functions.map((f) => f.name).join(", ")} CASCADE`);
  }
}

/** A random DB_NAMESPACE (letters and digits). */
export function randomNamespace(prefix = "r"): string {
  return `${prefix}${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
}

/** Settings every process starts from; the caller's win. */
export const PROCESS_BASE_ENV: Record<string, string> = {
  AUTHSVC_SITE_URL: "http://localhost:3000",
  AUTHSVC_API_EXTERNAL_URL: "http://localhost:8081",
  AUTHSVC_DB_DRIVER: "postgres",
  AUTHSVC_JWT_SECRET: PROCESS_JWT_SECRET,
  AUTHSVC_SMTP_ADMIN_EMAIL: "admin@example.com",
  AUTHSVC_API_HOST: "127.0.0.1",
  LOG_LEVEL: "error",
};

/** A running server process. */
export interface ServerProcess {
  url: string;
  pid: number;
  /** The last lines the process printed (stdout and stderr). */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
  stop(graceMs?: number): Promise<Deno.CommandStatus>;
}

/** Options of startServerProcess. */
export interface ProcessOptions {
  /** Extra flags for `deno run` before the script (e.g. `--cpu-prof`). */
  denoFlags?: string[];
  /** Milliseconds to wait for /health (default 60 s: the first run may compile). */
  readyTimeoutMs?: number;
}

const ROOT = new URL("../../", import.meta.url);

/** A start that failed because another process took its port first (the server says so). */
export function lostPortRace(e: unknown): boolean {
  return e instanceof Error && /AddrInUse|port \d+ is in use/.test(e.message);
}

/**
 * Starts `server/main.ts serve` with PROCESS_BASE_ENV plus `env`; resolves once it is healthy.
 * A port picked here may be taken by another process before the server listens: a start that
 * fails with AddrInUse is tried again on a new port (not when the caller named the port).
 */
export async function startServerProcess(
  env: Record<string, string>,
  opts: ProcessOptions = {},
): Promise<ServerProcess> {
  const named = !!env.PORT && env.PORT !== "0";
  for (let attempt = 1;; attempt++) {
    try {
      return await startOnce(env, opts);
    } catch (e) {
      const lost = lostPortRace(e);
      if (!lost || named || attempt >= 5) throw e;
    }
  }
}

async function startOnce(
  env: Record<string, string>,
  opts: ProcessOptions,
): Promise<ServerProcess> {
  // The listen line is an info log, which LOG_LEVEL=error hides: pick the port here.
  const port = env.PORT && env.PORT !== "0" ? Number(env.PORT) : freePort();
  const keep: Record<string, string> = {};
  for (const k of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "NO_COLOR"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) keep[k] = v;
  }
  const cmd = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-P=server",
      ...(opts.denoFlags ?? []),
      "server/main.ts",
      "serve",
      "--env-file",
      "/dev/null",
    ],
    cwd: ROOT,
    clearEnv: true,
    env: { ...keep, ...PROCESS_BASE_ENV, ...env, PORT: String(port) },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  const lines: string[] = [];
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    let rest = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop() ?? "";
      for (const line of parts) {
        lines.push(line.length > 2000 ? line.slice(0, 2000) + "…" : line);
        if (lines.length > 200) lines.shift();
      }
    }
    if (rest) lines.push(rest);
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const output = () => lines.join("\n");
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });

  const stop = async (graceMs = 10_000): Promise<Deno.CommandStatus> => {
    if (!exited) {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, graceMs);
      try {
        await status;
      } finally {
        clearTimeout(timer);
      }
    }
    await drained;
    return await status;
  };

  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const url = `http://127.0.0.1:${port}`;
  // The server answers 503 until its migrations are applied; a 200 proves the database answers.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`${url}/health`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* not yet */ }
    if (Date.now() > deadline || exited) {
      await stop(2000);
      throw new Error(`server process at ${url} never became healthy:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, pid: child.pid, output, stop };
}

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

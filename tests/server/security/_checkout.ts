/**
 * The server started as `deno task start` starts it in a checkout: `server/main.ts serve` with
 * the working directory `dir` (which holds the files the test put there, e.g. only the committed
 * .env.example), no `--env-file`, and no environment beyond what Deno itself needs and `env`.
 */
import { freePort } from "../../helpers/process.ts";

const ROOT = new URL("../../../", import.meta.url);

/** A server process running in a checkout. */
export interface CheckoutServer {
  url: string;
  /** Lines of standard output so far. */
  lines: string[];
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number>;
}

/** Copies the repository's committed .env.example into `dir`. */
export async function copyEnvExample(dir: string): Promise<void> {
  await Deno.copyFile(new URL(".env.example", ROOT), `${dir}/.env.example`);
}

function checkoutEnv(env: Record<string, string>): Record<string, string> {
  const all: Record<string, string> = {};
  for (const k of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) all[k] = v;
  }
  return Object.assign(all, env);
}

function command(dir: string, env: Record<string, string>, args: string[]): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-P=server",
      "--config",
      new URL("deno.json", ROOT).pathname,
      new URL("server/main.ts", ROOT).pathname,
      ...args,
    ],
    cwd: dir,
    env: checkoutEnv(env),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

/** Runs `server/main.ts <args>` in `dir` to its end (`migrate` reads the whole configuration). */
export async function runInCheckout(
  dir: string,
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await command(dir, env, args).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * Starts the server in `dir` and resolves once it logged that it listens. `env` gives the whole
 * environment beyond PATH, HOME, DENO_DIR, TMPDIR and XDG_CACHE_HOME; without a PORT of its own
 * (under any name) it gets `PORT` and `AUTHSVC_API_HOST=127.0.0.1`.
 */
export async function startInCheckout(
  dir: string,
  env: Record<string, string> = {},
): Promise<CheckoutServer> {
  const given = { ...env };
  if (!Object.keys(given).some((k) => /(^|_)PORT$/.test(k))) {
    given.PORT = String(freePort());
    given.AUTHSVC_API_HOST = "127.0.0.1";
  }
  const port = given.PORT ?? given.GOTRUE_PORT ?? given.AUTHSVC_API_PORT;
  const child = command(dir, given, ["serve"]).spawn();
  const stderr = new Response(child.stderr).text();
  const lines: string[] = [];
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  let listening = false;
  while (!listening) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += value;
    const parts = rest.split("\n");
    rest = parts.pop()!;
    lines.push(...parts);
    listening = parts.some((l) => l.includes("listening on"));
  }
  const drained = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      rest += r.value;
      const parts = rest.split("\n");
      rest = parts.pop()!;
      lines.push(...parts);
    }
  })();
  if (!listening) {
    await drained;
    await child.status;
    throw new Error(`the server did not start: ${lines.join("\n")}\n${await stderr}`);
  }
  let stopped: Promise<number> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    lines,
    stop() {
      return stopped ??= (async () => {
        try {
          child.kill("SIGTERM");
        } catch { /* exited */ }
        const { code } = await child.status;
        await drained;
        await stderr;
        return code;
      })();
    },
  };
}

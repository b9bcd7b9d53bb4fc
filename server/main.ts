/**
 * The server's command line: `serve` (default), `migrate`, `version`,
 * `healthcheck`, `admin` (admin_cli.ts), `--help`, `--env-file PATH`.
 * `deno task start -- <args>` passes a `--` first, which is skipped.
 *
 * A start that fails says so in one line (startup.ts) with exit code 1; the
 * stack trace only with LOG_LEVEL=debug.
 */
import { ConfigError, type LoadedConfig, readConfig, readEnvironment } from "./config/mod.ts";
import { settingNameWarnings } from "./config/names.ts";
import { ensureJwtSecret, type GeneratedSecret } from "./jwt_secret.ts";
import { migrate } from "./db/migrate.ts";
import { type App, createApp, openConfiguredDb } from "./app.ts";
import { fileSink, Logger } from "./observe/log.ts";
import { NAME, VERSION } from "./version.ts";
import { healthcheck, healthUrl } from "./healthcheck.ts";
import { checkEnvFile, listenError, startFailureLine } from "./startup.ts";
import { ADMIN_HELP, runAdmin } from "./admin_cli.ts";

const HELP = `${NAME} ${VERSION}: GoTrue-compatible authentication server

Usage: deno task start [-- <command>] [--env-file PATH]
       (a compiled binary: authsvc <command> [--env-file PATH])

Commands:
  serve        run the HTTP API (default); applies pending migrations first
  migrate      apply pending migrations and exit
  version      print the version and exit
  healthcheck  GET this server's /health (PORT, AUTHSVC_API_HOST); exit 0 when it
               answers 200, else 1 (container health checks without curl);
               --url URL checks another address
  admin        the first operator: create-user, set-role, token (admin --help)

Options:
  --env-file PATH   read settings from PATH instead of ./.env (default; ./.env.example
                    when there is no ./.env); the environment wins
  --help            show this text

Examples:
  deno task start -- --env-file prod.env
  deno task start -- admin create-user --email you@example.com --role supabase_admin
  deno task start -- healthcheck

Settings (AUTHSVC_* variables) are documented in docs/settings.md.`;

const COMMANDS = ["serve", "migrate", "version", "healthcheck", "admin"];

interface Args {
  command: string;
  envFile: string;
  help: boolean;
  url: string;
  /** Arguments of `admin`. */
  rest: string[];
}

function parseArgs(args: string[]): Args {
  const out: Args = { command: "serve", envFile: "", help: false, url: "", rest: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") continue; // `deno task start -- --help` hands it on
    if (a === "--env-file") {
      out.envFile = args[++i] ?? "";
      if (!out.envFile) throw new Error("--env-file needs a path");
    } else if (a.startsWith("--env-file=")) out.envFile = a.slice("--env-file=".length);
    else if (out.command === "admin") out.rest.push(a);
    else if (a === "--help" || a === "-h" || a === "help") out.help = true;
    else if (a === "--url") out.url = args[++i] ?? "";
    else if (a.startsWith("--url=")) out.url = a.slice("--url=".length);
    else if (COMMANDS.includes(a)) out.command = a;
    else throw new Error(`unknown argument "${a}" (see --help)`);
  }
  return out;
}

/** The settings of a start: env file and environment, a generated JWT secret, the config. */
interface Prepared {
  env: Record<string, string | undefined>;
  loaded: LoadedConfig;
  generated?: GeneratedSecret;
  log: Logger;
}

/** LOG_LEVEL=debug (from the environment or the env file) shows stack traces of failed starts. */
let debugStacks = Deno.env.get("LOG_LEVEL")?.trim().toLowerCase() === "debug";

async function prepare(envFile: string, quiet: boolean): Promise<Prepared> {
  const env: Record<string, string | undefined> = await readEnvironment(envFile);
  debugStacks ||= env.LOG_LEVEL?.trim().toLowerCase() === "debug";
  let generated: GeneratedSecret | undefined;
  if (env.AUTHSVC_JWT_SECRET === undefined && env.GOTRUE_JWT_SECRET === undefined) {
    // Never a secret anyone else knows: a random one of this installation's (jwt_secret.ts).
    generated = await ensureJwtSecret(env);
    env.AUTHSVC_JWT_SECRET = generated.secret;
  }
  const loaded = readConfig(env);
  const { config } = loaded;
  // Commands that print for a person log only errors, to stderr.
  const log = quiet
    ? new Logger("error", (l) => console.error(l))
    : new Logger(config.log.level, config.log.file ? fileSink(config.log.file) : undefined);
  return { env, loaded, generated, log };
}

function logStart(p: Prepared, usingExample: boolean): void {
  const { config, deprecations, aliases, docs } = p.loaded;
  const log = p.log;
  log.info(
    config.db.url
      ? "database: PostgreSQL (DATABASE_URL)"
      : `database: embedded PostgreSQL (PGlite) in ${config.db.dataDir}`,
  );
  if (usingExample) log.info("no ./.env found: using the defaults of ./.env.example");
  if (p.generated) log.info(p.generated.note);
  for (const d of deprecations) log.warn(d);
  for (const a of aliases) log.info(a);
  for (const w of settingNameWarnings(p.env, docs)) log.warn(w);
}

async function migrateCommand(p: Prepared): Promise<number> {
  const { config } = p.loaded;
  const db = await openConfiguredDb(config, p.log);
  try {
    await p.generated?.keep();
    const applied = await migrate(db, (m) => p.log.info(m));
    p.log.info(applied.length ? `applied ${applied.length} migration(s)` : "no pending migrations");
  } finally {
    await db.close();
  }
  return 0;
}

/** A 503 while the server opens its database and applies migrations. */
function starting(): Response {
  return Response.json(
    { code: 503, error_code: "unexpected_failure", msg: "The server is starting" },
    { status: 503, headers: { "retry-after": "1" } },
  );
}

/** Resolves with the first SIGINT or SIGTERM's name. */
function stopSignal(): Promise<string> {
  return new Promise((resolve) => {
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      try {
        Deno.addSignalListener(sig, () => resolve(sig));
      } catch { /* signals unsupported on this platform */ }
    }
  });
}

async function serve(p: Prepared): Promise<number> {
  const { config } = p.loaded;
  const log = p.log;
  // The port first: a port in use stops the start before the database is touched.
  const ready: { app?: App } = {}; // set once the database is open and migrated
  let httpServer: Deno.HttpServer<Deno.NetAddr>;
  try {
    httpServer = Deno.serve({
      hostname: config.api.host,
      port: config.api.port,
      onListen: () => {},
    }, (req, info) => ready.app?.fetch(req, info.remoteAddr.hostname) ?? starting());
  } catch (e) {
    throw listenError(e, config.api.host, config.api.port);
  }
  // A signal during the start stops the server once it has started.
  const stopped = stopSignal();
  let built: App | undefined;
  try {
    built = await createApp(config, { log });
    await p.generated?.keep();
  } catch (e) {
    await built?.close();
    await httpServer.shutdown();
    throw e;
  }
  ready.app = built;
  const { hostname, port } = httpServer.addr;
  log.info(`${NAME} ${VERSION} listening on http://${hostname}:${port}`);

  log.info(`${await stopped} received: stopping`);
  // stop accepting, let requests in flight finish (bounded to 10 s)
  await Promise.race([httpServer.shutdown(), new Promise((r) => setTimeout(r, 10_000))]);
  await built.close();
  log.info("stopped");
  return 0;
}

async function main(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs(args);
  } catch (e) {
    console.error((e as Error).message);
    return 2;
  }
  if (parsed.help) {
    console.log(HELP);
    return 0;
  }
  if (parsed.command === "version") {
    console.log(VERSION);
    return 0;
  }
  if (parsed.command === "admin" && (!parsed.rest.length || parsed.rest.includes("--help"))) {
    console.log(ADMIN_HELP);
    return parsed.rest.length ? 0 : 2;
  }
  // No --env-file and no ./.env: start on the committed local defaults.
  let envFile = parsed.envFile;
  let usingExample = false;
  if (envFile) {
    // A file named on the command line must be readable: a typo would otherwise start
    // the server on the environment alone.
    await checkEnvFile(envFile, true);
  } else {
    envFile = ".env";
    await checkEnvFile(envFile, false);
    try {
      await Deno.stat(".env");
    } catch {
      envFile = ".env.example";
      usingExample = true;
    }
  }
  if (parsed.command === "healthcheck") {
    return await healthcheck(
      parsed.url || healthUrl(await readEnvironment(envFile).catch(() => Deno.env.toObject())),
    );
  }
  let prepared;
  try {
    prepared = await prepare(envFile, parsed.command === "admin");
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    console.error(`${NAME}: cannot start, the configuration has problems:`);
    for (const problem of e.problems) console.error(`  ${problem}`);
    return 1;
  }
  if (parsed.command === "admin") return await runAdmin(parsed.rest, prepared);
  logStart(prepared, usingExample);
  return parsed.command === "migrate" ? await migrateCommand(prepared) : await serve(prepared);
}

/** Prints a failed start as one line (and the stack with LOG_LEVEL=debug); answers exit code 1. */
function reportFailure(e: unknown): number {
  const { line, described } = e instanceof ConfigError
    ? { line: e.problems.join("; "), described: true }
    : startFailureLine(e);
  const more = described || debugStacks ? "" : " (LOG_LEVEL=debug shows where)";
  console.error(`${NAME}: cannot start: ${line}${more}`);
  if (debugStacks) console.error(e instanceof Error ? e.stack : e);
  return 1;
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (e) {
    code = reportFailure(e);
  }
  Deno.exit(code);
}

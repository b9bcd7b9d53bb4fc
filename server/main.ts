/**
 * The server's command line: `serve` (default), `migrate`, `version`,
 * `--help`, `--env-file PATH`.
 */
import { ConfigError, readConfig, readEnvironment } from "./config.ts";
import { ensureJwtSecret, type GeneratedSecret } from "./jwt_secret.ts";
import { openDb } from "./db/db.ts";
import { migrate } from "./db/migrate.ts";
import { createApp } from "./app.ts";
import { fileSink, Logger } from "./observe/log.ts";
import { NAME, VERSION } from "./version.ts";
import { healthcheck, healthUrl } from "./healthcheck.ts";

const HELP = `${NAME} ${VERSION}: GoTrue-compatible authentication server

Usage: deno task start [-- <command>] [--env-file PATH]

Commands:
  serve      run the HTTP API (default); applies pending migrations first
  migrate    apply pending migrations and exit
  version    print the version and exit
  healthcheck  GET this server's /health (PORT, AUTHSVC_API_HOST); exit 0 when it
             answers 200, else 1 (container health checks without curl);
             --url URL checks another address

Options:
  --env-file PATH   read settings from PATH instead of ./.env (default; ./.env.example
                    when there is no ./.env); the environment wins
  --help            show this text

Settings (AUTHSVC_* variables) are documented in docs/settings.md.`;

function parseArgs(
  args: string[],
): { command: string; envFile: string; help: boolean; url: string } {
  let command = "serve";
  let envFile = "";
  let url = "";
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--help" || a === "-h" || a === "help") help = true;
    else if (a === "--env-file") {
      envFile = args[++i] ?? "";
      if (!envFile) throw new Error("--env-file needs a path");
    } else if (a.startsWith("--env-file=")) envFile = a.slice("--env-file=".length);
    else if (a === "--url") url = args[++i] ?? "";
    else if (a.startsWith("--url=")) url = a.slice("--url=".length);
    else if (["serve", "migrate", "version", "healthcheck"].includes(a)) command = a;
    else throw new Error(`unknown argument "${a}" (see --help)`);
  }
  return { command, envFile, help, url };
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
  // No --env-file and no ./.env: start on the committed local defaults.
  let envFile = parsed.envFile;
  let usingExample = false;
  if (envFile) {
    // A file named on the command line must exist: a typo would otherwise start
    // the server on the environment alone.
    try {
      await Deno.stat(envFile);
    } catch {
      console.error(`${NAME}: cannot start, --env-file ${envFile} cannot be read`);
      return 1;
    }
  } else {
    envFile = ".env";
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
  let loaded;
  let generated: GeneratedSecret | undefined;
  try {
    const env = await readEnvironment(envFile);
    if (env.AUTHSVC_JWT_SECRET === undefined && env.GOTRUE_JWT_SECRET === undefined) {
      // Never a secret anyone else knows: a random one of this installation's (jwt_secret.ts).
      generated = await ensureJwtSecret(env);
      env.AUTHSVC_JWT_SECRET = generated.secret;
    }
    loaded = readConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`${NAME}: cannot start, the configuration has problems:`);
      for (const p of e.problems) console.error(`  ${p}`);
      return 1;
    }
    throw e;
  }
  const { config, deprecations, aliases } = loaded;
  const log = new Logger(config.log.level, config.log.file ? fileSink(config.log.file) : undefined);
  log.info(
    config.db.url
      ? "database: PostgreSQL (DATABASE_URL)"
      : `database: embedded PostgreSQL (PGlite) in ${config.db.dataDir}`,
  );
  if (usingExample) log.info("no ./.env found: using the defaults of ./.env.example");
  if (generated) log.info(generated.note);
  for (const d of deprecations) log.warn(d);
  for (const a of aliases) log.info(a);

  if (parsed.command === "migrate") {
    const db = await openDb({
      url: config.db.url,
      dataDir: config.db.dataDir,
      maxPoolSize: config.db.maxPoolSize,
      statementTimeoutMs: config.db.statementTimeoutMs,
      unnamedStatements: config.db.unnamedStatements,
      prefix: config.db.namespace,
      warn: (m) => log.warn(m),
    });
    try {
      await generated?.keep();
      const applied = await migrate(db, (m) => log.info(m));
      log.info(applied.length ? `applied ${applied.length} migration(s)` : "no pending migrations");
    } finally {
      await db.close();
    }
    return 0;
  }

  const server = await createApp(config, { log });
  try {
    await generated?.keep();
  } catch (e) {
    await server.close();
    if (!(e instanceof ConfigError)) throw e;
    console.error(`${NAME}: cannot start: ${e.problems.join("; ")}`);
    return 1;
  }
  const httpServer = Deno.serve({
    hostname: config.api.host,
    port: config.api.port,
    onListen: ({ hostname, port }) =>
      log.info(`${NAME} ${VERSION} listening on http://${hostname}:${port}`),
  }, (req, info) => {
    const addr = info.remoteAddr as Deno.NetAddr;
    return server.fetch(req, addr.hostname);
  });

  const done = new Promise<void>((resolve) => {
    let stopping = false;
    const stop = async (sig: string) => {
      if (stopping) return;
      stopping = true;
      log.info(`${sig} received: stopping`);
      // stop accepting, let requests in flight finish (bounded to 10 s)
      await Promise.race([httpServer.shutdown(), new Promise((r) => setTimeout(r, 10_000))]);
      await server.close();
      log.info("stopped");
      resolve();
    };
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      try {
        Deno.addSignalListener(sig, () => stop(sig));
      } catch { /* signals unsupported on this platform */ }
    }
  });
  await done;
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}

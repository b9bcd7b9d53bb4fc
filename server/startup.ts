/**
 * What the command line says when a start fails: one line naming what went
 * wrong and the setting to change, exit code 1, and the stack trace only with
 * LOG_LEVEL=debug. Configuration problems (ConfigError) keep their own form,
 * one line per variable (main.ts).
 */
import { DbUnavailableError } from "./db/db.ts";
import { DataDirError } from "./db/data_dir.ts";
import { PgConnectionError } from "./db/pg/errors.ts";

/** A start that cannot go on; the message says why and what to do. */
export class StartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StartError";
  }
}

const NO_DATABASE = "create that database, or name an existing one in DATABASE_URL";

/** What to do about a PostgreSQL connection that failed, by its SQLSTATE or client code. */
const PG_HINTS: [RegExp, string][] = [
  [/^(28P01|28000|AUTH_FAILED)$/, "check the user and password in DATABASE_URL"],
  [/^AUTH_NOT_ALLOWED$/, "check require_auth and the password in DATABASE_URL"],
  [/^3D000$/, NO_DATABASE],
  [
    /^(53300|57P03)$/,
    "PostgreSQL takes no more connections now: try again, or lower AUTHSVC_DB_MAX_POOL_SIZE",
  ],
  [/^TLS_/, "check sslmode in DATABASE_URL"],
  [/^CONNECT_TIMEOUT$/, "check the host in DATABASE_URL and that it is reachable from here"],
];

function pgHint(e: PgConnectionError): string {
  const state = (e.cause as { code?: unknown } | undefined)?.code;
  for (const [re, hint] of PG_HINTS) {
    if (re.test(String(state ?? "")) || re.test(e.code)) return hint;
  }
  // PgBouncer passes PostgreSQL's text on but sends its own SQLSTATE (08P01).
  if (/database "[^"]*" does not exist|no such database/i.test(e.message)) return NO_DATABASE;
  if (/TLS|sslmode|certificate/i.test(e.message)) return "check sslmode in DATABASE_URL";
  return "check the host and port in DATABASE_URL and that PostgreSQL is running there";
}

/** The message of a thrown value, also for values that are not Errors (PGlite's ExitStatus). */
function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  const m = (e as { message?: unknown })?.message;
  return typeof m === "string" ? m : String(e);
}

/**
 * One line for a failed start: what went wrong and what to do about it.
 * `described` is false for failures this module does not know, whose message
 * alone may not say what to do.
 */
export function startFailureLine(e: unknown): { line: string; described: boolean } {
  if (e instanceof StartError || e instanceof DataDirError) {
    return { line: e.message, described: true };
  }
  const cause = e instanceof DbUnavailableError ? e.cause : e;
  if (cause instanceof PgConnectionError) {
    return {
      line: `the database (DATABASE_URL) cannot be reached: ${cause.message}; ${pgHint(cause)}`,
      described: true,
    };
  }
  // The PostgreSQL client's URL parser names DATABASE_URL in its TypeErrors.
  if (e instanceof TypeError && e.message.startsWith("DATABASE_URL")) {
    return { line: e.message, described: true };
  }
  return { line: messageOf(e), described: false };
}

/** The StartError of a listener that could not be opened on `host:port`. */
export function listenError(e: unknown, host: string, port: number): StartError {
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (e instanceof Deno.errors.AddrInUse) {
    return new StartError(
      `port ${port} is in use (${where}): stop the program that listens there, or set PORT to a free port`,
      { cause: e },
    );
  }
  if (e instanceof Deno.errors.AddrNotAvailable) {
    return new StartError(
      `cannot listen on ${where}: no interface of this machine has that address; set AUTHSVC_API_HOST to one of its addresses, or 0.0.0.0`,
      { cause: e },
    );
  }
  if (e instanceof Deno.errors.PermissionDenied) {
    return new StartError(
      `cannot listen on ${where}: permission denied (ports below 1024 need privileges); set PORT to 1024 or above`,
      { cause: e },
    );
  }
  return new StartError(
    `cannot listen on ${where}: ${messageOf(e)}; check PORT and AUTHSVC_API_HOST`,
    { cause: e },
  );
}

/** Reads an env file for the command line; a file that cannot be read is a StartError. */
export async function checkEnvFile(path: string, named: boolean): Promise<void> {
  const what = named ? `--env-file ${path}` : path;
  const todo = named
    ? "name a readable file"
    : "fix its permissions, or name another with --env-file";
  try {
    const info = await Deno.stat(path);
    if (info.isDirectory) {
      throw new StartError(`${what} cannot be read: it is a directory; ${todo}`);
    }
    const file = await Deno.open(path, { read: true });
    file.close();
  } catch (e) {
    if (e instanceof StartError) throw e;
    if (!named && e instanceof Deno.errors.NotFound) return;
    const why = e instanceof Deno.errors.NotFound
      ? "no such file"
      : e instanceof Deno.errors.PermissionDenied
      ? "permission denied"
      : messageOf(e);
    throw new StartError(`${what} cannot be read: ${why}; ${todo}`, { cause: e });
  }
}

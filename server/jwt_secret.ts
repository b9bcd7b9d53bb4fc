/**
 * A signing secret for a server started without AUTHSVC_JWT_SECRET (a fresh
 * clone running `deno task start`): a random one, made on the first start
 * and kept in `<AUTHSVC_DB_DATA_DIR>/jwt_secret` (mode 0600) so tokens keep
 * verifying across restarts. Nobody else knows it, unlike a secret written in
 * a committed file. With an in-memory database it lives as long as the
 * process. Several server processes must share one secret: production sets
 * AUTHSVC_JWT_SECRET (or AUTHSVC_JWT_KEYS) explicitly.
 */
import { ConfigError, DEFAULT_DATA_DIR, MIN_JWT_SECRET_BYTES } from "./config/mod.ts";

/** Name of the kept secret's file inside the data directory. */
export const JWT_SECRET_FILE = "jwt_secret";

/** What `ensureJwtSecret` did, for the log (never the secret itself). */
export interface GeneratedSecret {
  secret: string;
  /** True when the secret was read from its file (it outlives this process). */
  kept: boolean;
  /** A log line saying where the secret came from. */
  note: string;
  /** Writes a new secret to its file (call once the database is open). */
  keep(): Promise<void>;
}

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(48));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replaceAll("=", "");
}

async function readKept(path: string): Promise<string> {
  const secret = (await Deno.readTextFile(path)).trim();
  if (new TextEncoder().encode(secret).length < MIN_JWT_SECRET_BYTES) {
    throw new ConfigError([
      `AUTHSVC_JWT_SECRET: unset, and ${path} holds no usable secret (under ${MIN_JWT_SECRET_BYTES} bytes): delete it to have a new one generated, or set AUTHSVC_JWT_SECRET`,
    ]);
  }
  return secret;
}

/** Writes `secret` to `path` unless it exists; answers the secret the file holds afterwards. */
async function keepSecret(dir: string, path: string, secret: string): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  // The file appears with its whole content at once (a hard link of a finished temporary
  // file): a process starting at the same time reads a whole secret or none.
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(tmp, `${secret}\n`, { mode: 0o600, createNew: true });
  try {
    await Deno.link(tmp, path);
    return secret;
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    return await readKept(path); // another process made it first: use theirs
  } finally {
    await Deno.remove(tmp);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    // A data directory that is a file is refused, naming it, when the database opens.
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return false;
    throw e;
  }
}

/**
 * The secret to use when `env` has no AUTHSVC_JWT_SECRET: the one kept in
 * the data directory, or a new one. `keep()` must be called once the database
 * is open: PGlite initialises only an empty directory, so on the very first
 * start the file is written after it did.
 */
export async function ensureJwtSecret(
  env: Record<string, string | undefined>,
): Promise<GeneratedSecret> {
  const dataDir = env.AUTHSVC_DB_DATA_DIR?.trim() || DEFAULT_DATA_DIR;
  if (dataDir.startsWith("memory://")) {
    return {
      secret: randomSecret(),
      kept: false,
      note:
        "AUTHSVC_JWT_SECRET is unset: using a random JWT secret for this process only (the database is in memory)",
      keep: () => Promise.resolve(),
    };
  }
  const path = `${dataDir.replace(/\/+$/, "")}/${JWT_SECRET_FILE}`;
  if (await exists(path)) {
    return {
      secret: await readKept(path),
      kept: true,
      note: `AUTHSVC_JWT_SECRET is unset: using the JWT secret kept in ${path}`,
      keep: () => Promise.resolve(),
    };
  }
  const note =
    `AUTHSVC_JWT_SECRET is unset: generated a random JWT secret, kept in ${path}; set AUTHSVC_JWT_SECRET when several hosts share the database`;
  const usesPglite = !(env.DATABASE_URL?.trim() || env.AUTHSVC_DB_DATABASE_URL?.trim());
  if (usesPglite && !(await exists(`${dataDir}/PG_VERSION`))) {
    // A fresh PGlite directory must stay empty until PGlite initialised it. PGlite serves
    // one process, so nobody else writes this file meanwhile.
    const secret = randomSecret();
    return {
      secret,
      kept: false,
      note,
      async keep() {
        if (await keepSecret(dataDir, path, secret) !== secret) {
          throw new ConfigError([
            `AUTHSVC_JWT_SECRET: unset, and ${path} appeared while starting; start again`,
          ]);
        }
      },
    };
  }
  return {
    secret: await keepSecret(dataDir, path, randomSecret()),
    kept: true,
    note,
    keep: () => Promise.resolve(),
  };
}

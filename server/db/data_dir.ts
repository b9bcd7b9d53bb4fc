/**
 * The embedded database's data directory (AUTHSVC_DB_DATA_DIR), claimed
 * before PGlite opens it:
 *
 * - one process at a time: PGlite has no lock of its own, and two processes
 *   writing one directory corrupt it. The claim is an exclusive `flock` on the
 *   directory itself (released by the kernel when the process ends, however it
 *   ends), and `authsvc.pid` says who holds it, so a second server can name
 *   the first;
 * - a directory PGlite would refuse is named with the files in the way:
 *   PGlite initialises only an empty directory and otherwise stops with
 *   "exit(1)". The server's own files (the generated `jwt_secret`, written by
 *   server/jwt_secret.ts, and `authsvc.pid`) are set aside while PGlite
 *   initialises and put back afterwards, so they never make the directory
 *   unusable.
 */

/** The data directory cannot be used; the message says why and what to do. */
export class DataDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DataDirError";
  }
}

/** Who holds a data directory, written inside it once the database is open. */
export const HOLDER_FILE = "authsvc.pid";

/** Files of this server that may sit in a data directory before PGlite initialised it. */
const OWN_FILES = ["jwt_secret", HOLDER_FILE];
/** A secret being written (server/jwt_secret.ts writes a temporary file, then links it). */
const OWN_TEMPORARY = /^jwt_secret\.[0-9a-f-]{36}\.tmp$/;

const SETTING = "AUTHSVC_DB_DATA_DIR";

/** A claimed data directory. */
export interface DataDirClaim {
  /** Puts back the server's files set aside for an initialisation, and says who holds it. */
  opened(): Promise<void>;
  /** Gives the directory up (when the database has closed). */
  release(): Promise<void>;
}

function reason(e: unknown): string {
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (e instanceof Deno.errors.NotADirectory) return "a part of the path is a file";
  return e instanceof Error ? e.message : String(e);
}

async function holderOf(dir: string): Promise<string> {
  try {
    const h = JSON.parse(await Deno.readTextFile(`${dir}/${HOLDER_FILE}`));
    const what = [String(h.pid)];
    if (h.hostname) what.push(`on ${h.hostname}`);
    if (h.started) what.push(`since ${h.started}`);
    return `process ${what.join(" ")}${h.command ? ` (${h.command})` : ""}`;
  } catch {
    return "another process (it is still opening the database)";
  }
}

async function entries(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

/**
 * Claims `dir` for this process: creates it when missing, locks it, and
 * refuses a non-empty directory that holds no database. Throws DataDirError.
 */
export async function claimDataDir(dir: string): Promise<DataDirClaim> {
  try {
    const info = await Deno.stat(dir);
    if (!info.isDirectory) {
      throw new DataDirError(
        `${SETTING} ${dir} is a file, not a directory: point ${SETTING} at a directory (it is created when missing)`,
      );
    }
  } catch (e) {
    if (e instanceof DataDirError) throw e;
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new DataDirError(`${SETTING} ${dir} cannot be read (${reason(e)})`);
    }
    try {
      await Deno.mkdir(dir, { recursive: true });
    } catch (e) {
      throw new DataDirError(
        `${SETTING} ${dir} cannot be created (${
          reason(e)
        }): create it writable for this user, or point ${SETTING} elsewhere`,
      );
    }
  }
  let handle: Deno.FsFile;
  try {
    handle = await Deno.open(dir, { read: true });
  } catch (e) {
    throw new DataDirError(`${SETTING} ${dir} cannot be opened (${reason(e)})`);
  }
  if (!await handle.tryLock(true)) {
    handle.close();
    throw new DataDirError(
      `${SETTING} ${dir} is in use by ${await holderOf(
        dir,
      )}: the embedded database serves one process; stop that server, give this one another ${SETTING}, or let several share PostgreSQL (DATABASE_URL)`,
    );
  }
  try {
    return await prepare(dir, handle);
  } catch (e) {
    handle.close();
    throw e;
  }
}

async function prepare(dir: string, handle: Deno.FsFile): Promise<DataDirClaim> {
  const names = await entries(dir);
  const aside = new Map<string, Uint8Array>();
  if (!names.includes("PG_VERSION")) {
    const foreign = names.filter((n) => !OWN_FILES.includes(n) && !OWN_TEMPORARY.test(n));
    if (foreign.length) {
      const shown = foreign.slice(0, 3).join(", ") + (foreign.length > 3 ? ", ..." : "");
      throw new DataDirError(
        `${SETTING} ${dir} holds files but no database (${shown}): point ${SETTING} at a new or empty directory, or move those files away`,
      );
    }
    // PGlite initialises only an empty directory: our own files wait in memory meanwhile.
    for (const n of names) {
      const path = `${dir}/${n}`;
      if (OWN_FILES.includes(n)) aside.set(n, await Deno.readFile(path));
      await Deno.remove(path);
    }
  }
  let restored = false;
  const restore = async () => {
    if (restored) return;
    restored = true;
    for (const [n, bytes] of aside) {
      if (n !== HOLDER_FILE) await Deno.writeFile(`${dir}/${n}`, bytes, { mode: 0o600 });
    }
  };
  return {
    async opened() {
      await restore();
      const holder = {
        pid: Deno.pid,
        hostname: safeHostname(),
        started: new Date().toISOString(),
        command: [Deno.mainModule.split("/").pop(), ...Deno.args].join(" ").slice(0, 200),
      };
      await Deno.writeTextFile(`${dir}/${HOLDER_FILE}`, `${JSON.stringify(holder)}\n`);
    },
    async release() {
      try {
        await restore();
        await Deno.remove(`${dir}/${HOLDER_FILE}`).catch(() => {});
      } finally {
        handle.close();
      }
    },
  };
}

function safeHostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return "";
  }
}

/**
 * Two lockfiles, one source: deno.dev.lock locks every npm package of the
 * repository (the server's, and those of the `scopes` of deno.json: tests/,
 * bench/, scripts/); deno.lock, the lockfile deno.json names, is the part of it
 * that the server's own dependencies (deno.json `imports`) pull in, with the
 * same versions and integrity hashes.
 *
 * Why two: Deno installs every npm package its lockfile names before it runs
 * anything (`deno task` included), so a single lockfile would make a first
 * `deno task start` fetch the test tools too. deno.json freezes deno.lock;
 * commands that need the other packages (`deno task test`, `check`, `bench`,
 * ...) pass `--lock=deno.dev.lock`.
 *
 *   deno run -A --no-lock scripts/lock.ts          # after changing deno.json: both lockfiles
 *   deno run -A --no-lock scripts/lock.ts --check  # exit 1 when deno.lock is not the subset
 *
 * The first runs `deno install --lock=deno.dev.lock --frozen=false` (which
 * resolves what changed and keeps the rest), then writes deno.lock from it.
 * (`deno task` itself refuses to start while deno.lock is out of date, so this
 * is not a task.) tests/server/core/lock_test.ts runs the check.
 */

/** A Deno lockfile (version 5): what this script reads and writes of it. */
export interface Lockfile {
  version: string;
  specifiers?: Record<string, string>;
  npm?: Record<string, { dependencies?: string[]; optionalDependencies?: string[] }>;
  workspace?: { dependencies?: string[] };
  [section: string]: unknown;
}

const ROOT = new URL("../", import.meta.url);
export const CONFIG = new URL("deno.json", ROOT);
export const DEV_LOCK = new URL("deno.dev.lock", ROOT);
export const SERVER_LOCK = new URL("deno.lock", ROOT);

/** `@scope/name` of `@scope/name@1.2.3_peer@4.5.6` or `@scope/name@^1.2`. */
function nameOf(id: string): string {
  return id.slice(0, id.indexOf("@", 1));
}

/**
 * The lockfile key of an import map target such as `npm:hono@^4.13.19` (or
 * `npm:/hono@^4.13.19/`): Deno writes some ranges in a normal form (`^0.5.17`
 * as `~0.5.17`, `^7.0.0` as `7`), so the key is found among those of the
 * package by its range or that form.
 */
function lockKeyOf(target: string, keys: string[]): string {
  const bare = target.slice(4).replace(/^\//, "").replace(/\/$/, "");
  const name = nameOf(bare);
  const range = bare.slice(name.length + 1);
  const forms = new Set([range]);
  const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range);
  if (m && m[1] === "0") forms.add(`~0.${m[2]}.${m[3]}`);
  if (m && m[1] !== "0" && m[2] === "0" && m[3] === "0") forms.add(m[1]);
  const found = keys.filter((k) =>
    nameOf(k.slice(4)) === name && forms.has(k.slice(4 + name.length + 1))
  );
  if (found.length !== 1) {
    throw new Error(`deno.dev.lock has no single entry for ${target}: run \`${LOCK_COMMAND}\``);
  }
  return found[0];
}

/**
 * The lockfile of `imports` (the server's npm dependencies): their specifiers,
 * every npm package they reach, and the workspace section as it is (Deno lists
 * every dependency of the configuration there, scoped ones too, and rewrites a
 * lockfile whose list differs). A dependency entry is written by bare name when
 * that name has one version in the result, by full id otherwise, as Deno
 * writes it.
 */
export function serverLock(dev: Lockfile, imports: Record<string, string>): Lockfile {
  const devNpm = dev.npm ?? {};
  const byName = new Map<string, string[]>();
  for (const id of Object.keys(devNpm)) {
    byName.set(nameOf(id), [...byName.get(nameOf(id)) ?? [], id]);
  }
  /** The package id a dependency entry of deno.dev.lock names. */
  const resolve = (dep: string): string => {
    if (devNpm[dep]) return dep;
    const ids = byName.get(dep) ?? [];
    if (ids.length !== 1) throw new Error(`deno.dev.lock: cannot tell which "${dep}" is meant`);
    return ids[0];
  };
  const keys = Object.keys(dev.specifiers ?? {});
  const wanted = new Set(
    Object.values(imports).filter((t) => t.startsWith("npm:")).map((t) => lockKeyOf(t, keys)),
  );
  const specifiers: Record<string, string> = {};
  const todo: string[] = [];
  for (const key of keys.filter((k) => wanted.has(k))) {
    const version = dev.specifiers![key];
    specifiers[key] = version;
    todo.push(`${nameOf(key.slice(4))}@${version}`);
  }
  const kept = new Set<string>();
  while (todo.length) {
    const id = todo.pop()!;
    if (kept.has(id)) continue;
    if (!devNpm[id]) throw new Error(`deno.dev.lock names ${id} but does not lock it`);
    kept.add(id);
    const entry = devNpm[id];
    for (const d of [...entry.dependencies ?? [], ...entry.optionalDependencies ?? []]) {
      todo.push(resolve(d));
    }
  }
  const versions = new Map<string, number>();
  for (const id of kept) versions.set(nameOf(id), (versions.get(nameOf(id)) ?? 0) + 1);
  const spell = (dep: string) => {
    const id = resolve(dep);
    return versions.get(nameOf(id)) === 1 ? nameOf(id) : id;
  };
  const npm: NonNullable<Lockfile["npm"]> = {};
  for (const id of Object.keys(devNpm).filter((k) => kept.has(k))) {
    const entry = { ...devNpm[id] };
    if (entry.dependencies) entry.dependencies = entry.dependencies.map(spell);
    if (entry.optionalDependencies) {
      entry.optionalDependencies = entry.optionalDependencies.map(spell);
    }
    npm[id] = entry;
  }
  const out: Lockfile = { version: dev.version, specifiers };
  if (Object.keys(npm).length) out.npm = npm;
  if (dev.workspace) out.workspace = dev.workspace;
  return out;
}

/** The text deno.lock should have, from deno.dev.lock and deno.json on disk. */
export async function expectedServerLock(): Promise<string> {
  const dev = JSON.parse(await Deno.readTextFile(DEV_LOCK)) as Lockfile;
  const config = JSON.parse(await Deno.readTextFile(CONFIG)) as {
    imports: Record<string, string>;
  };
  return JSON.stringify(serverLock(dev, config.imports), null, 2) + "\n";
}

/** What to run when the lockfiles are out of date. */
export const LOCK_COMMAND = "deno run -A --no-lock scripts/lock.ts";

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    const have = await Deno.readTextFile(SERVER_LOCK).catch(() => "");
    if (have !== await expectedServerLock()) {
      console.error(`deno.lock is not the server's part of deno.dev.lock: run \`${LOCK_COMMAND}\``);
      Deno.exit(1);
    }
  } else {
    const install = await new Deno.Command(Deno.execPath(), {
      args: ["install", "--lock=deno.dev.lock", "--frozen=false"],
      cwd: ROOT,
    }).output();
    if (!install.success) Deno.exit(install.code);
    await Deno.writeTextFile(SERVER_LOCK, await expectedServerLock());
    console.log("deno.dev.lock is up to date; wrote deno.lock, the server's part of it");
  }
}

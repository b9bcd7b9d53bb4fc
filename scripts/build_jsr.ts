/**
 * Builds the JSR package of the OAuth client library: `mod.ts`, `oidc.ts`,
 * `client/` and `LICENSE` as they are, with a `deno.json` of its own that
 * holds only what JSR reads (name, version, licence, exports). The
 * repository's deno.json configures the server, its tests and tools; none of
 * that is published.
 *
 *   deno task build:jsr                               # writes dist/jsr
 *   deno task publish:check                           # builds in a temporary directory, deno publish --dry-run
 *   deno task publish:jsr                             # the same, then deno publish
 *   deno run -A scripts/build_jsr.ts --out /tmp/pkg
 */
import { EXPORTS, LICENSE, NAME, VERSION } from "./package.ts";

const root = new URL("../", import.meta.url);

/** Where the package goes unless `--out` says otherwise. */
export const DEFAULT_OUT: string = new URL("dist/jsr/", root).pathname;

async function copyTree(from: URL, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) {
      await copyTree(new URL(`${entry.name}/`, from), `${to}/${entry.name}`);
    } else if (entry.isFile) await Deno.copyFile(new URL(entry.name, from), `${to}/${entry.name}`);
  }
}

/** The package's deno.json: what JSR needs, nothing of the repository's configuration. */
export function packageConfig(): Record<string, unknown> {
  return { name: NAME, version: VERSION, license: LICENSE, exports: EXPORTS };
}

/** Builds the package into `outDir` (emptied first); returns `outDir`. */
export async function buildJsr(outDir: string = DEFAULT_OUT): Promise<string> {
  await Deno.remove(outDir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  await Deno.mkdir(outDir, { recursive: true });
  for (const module of new Set(Object.values(EXPORTS))) {
    await Deno.copyFile(new URL(module, root), `${outDir}/${module}`);
  }
  await copyTree(new URL("client/", root), `${outDir}/client`);
  await Deno.copyFile(new URL("LICENSE", root), `${outDir}/LICENSE`);
  await Deno.writeTextFile(
    `${outDir}/deno.json`,
    JSON.stringify(packageConfig(), null, 2) + "\n",
  );
  return outDir;
}

/** Builds into a temporary directory and runs `deno publish` there (`--dry-run` unless told). */
export async function publishJsr(dryRun: boolean): Promise<Deno.CommandOutput> {
  const dir = await Deno.makeTempDir({ prefix: "oauth2-jsr-" });
  try {
    await buildJsr(dir);
    return await new Deno.Command(Deno.execPath(), {
      args: ["publish", ...(dryRun ? ["--dry-run"] : [])],
      cwd: dir,
      env: dryRun ? { NO_COLOR: "1" } : {},
      stdout: dryRun ? "piped" : "inherit",
      stderr: dryRun ? "piped" : "inherit",
      stdin: dryRun ? "null" : "inherit",
    }).output();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  if (Deno.args.includes("--dry-run") || Deno.args.includes("--publish")) {
    const dryRun = !Deno.args.includes("--publish");
    const out = await publishJsr(dryRun);
    if (dryRun) {
      await Deno.stdout.write(out.stdout);
      await Deno.stderr.write(out.stderr);
    }
    Deno.exit(out.code);
  }
  const i = Deno.args.indexOf("--out");
  console.log(`wrote ${await buildJsr(i >= 0 ? Deno.args[i + 1] : DEFAULT_OUT)}`);
}

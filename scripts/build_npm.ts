/**
 * Builds the npm package of the OAuth client library: ESM `.js` + `.d.ts`
 * emitted by TypeScript from `mod.ts` and `client/`, and a `package.json`
 * with `exports`. Runs no bundler: the library has no dependencies.
 *
 *   deno task build:npm                 # writes dist/npm
 *   deno run -A scripts/build_npm.ts --out /tmp/pkg
 */
import ts from "typescript";
import { BUGS, EXPORTS, HOMEPAGE, LICENSE, NAME, REPOSITORY, VERSION } from "./package.ts";

const root = new URL("../", import.meta.url);

/** Where the package goes unless `--out` says otherwise. */
export const DEFAULT_OUT: string = new URL("dist/npm/", root).pathname;

async function* sources(dir: URL): AsyncGenerator<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) yield* sources(url);
    else if (entry.name.endsWith(".ts")) yield url;
  }
}

/** Rewrites relative `.ts` specifiers to `.js`, as Node resolves them. */
function toJsSpecifiers(code: string): string {
  return code.replace(
    /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']+)\.ts(["'])/g,
    "$1$2.js$3",
  );
}

/**
 * Builds the package into `outDir` (emptied first).
 *
 * @returns the files written, relative to `outDir`
 * @throws {Error} with the TypeScript diagnostics when compilation fails
 */
export async function buildNpm(outDir: string = DEFAULT_OUT): Promise<string[]> {
  const stage = await Deno.makeTempDir({ prefix: "oauth2-npm-src-" });
  try {
    const files = [new URL("mod.ts", root), new URL("oidc.ts", root)];
    for await (const f of sources(new URL("client/", root))) files.push(f);
    const rootNames: string[] = [];
    for (const file of files) {
      const rel = file.pathname.slice(root.pathname.length);
      const target = `${stage}/${rel}`;
      await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
      await Deno.writeTextFile(target, toJsSpecifiers(await Deno.readTextFile(file)));
      rootNames.push(target);
    }
    await Deno.remove(outDir, { recursive: true }).catch(() => {});
    await Deno.mkdir(outDir, { recursive: true });
    const program = ts.createProgram({
      rootNames,
      options: {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        lib: ["lib.es2022.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
        declaration: true,
        strict: true,
        skipLibCheck: true,
        types: [],
        rootDir: stage,
        outDir,
        newLine: ts.NewLineKind.LineFeed,
      },
    });
    const result = program.emit();
    const diagnostics = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics];
    if (diagnostics.length > 0 || result.emitSkipped) {
      throw new Error(
        "TypeScript could not build the npm package:\n" +
          ts.formatDiagnostics(diagnostics, {
            getCanonicalFileName: (f) => f,
            getCurrentDirectory: () => stage,
            getNewLine: () => "\n",
          }),
      );
    }
    /** An entry point as Node resolves it: the emitted `.js` and its `.d.ts`. */
    const entry = (module: string) => {
      const base = module.replace(/\.ts$/, "");
      return { types: `${base}.d.ts`, import: `${base}.js`, default: `${base}.js` };
    };
    const pkg = {
      name: NAME,
      version: VERSION,
      description:
        "OAuth 2.0 client (OAuth 2.1, OpenID Connect usage) on web standards: Deno, Node 20+, browsers",
      license: LICENSE,
      repository: { type: "git", url: `git+${REPOSITORY}.git`, directory: "client" },
      homepage: HOMEPAGE,
      bugs: { url: BUGS },
      type: "module",
      main: entry(EXPORTS["."]).import,
      types: entry(EXPORTS["."]).types,
      exports: Object.fromEntries(Object.entries(EXPORTS).map(([sub, m]) => [sub, entry(m)])),
      sideEffects: false,
      engines: { node: ">=20" },
      keywords: ["oauth", "oauth2", "oidc", "pkce", "client"],
    };
    await Deno.writeTextFile(`${outDir}/package.json`, JSON.stringify(pkg, null, 2) + "\n");
    await Deno.copyFile(new URL("LICENSE", root), `${outDir}/LICENSE`);
    // The package carries the client-only README, not the repository's (which covers the server).
    await Deno.copyFile(new URL("client/README.md", root), `${outDir}/README.md`);
  } finally {
    await Deno.remove(stage, { recursive: true });
  }
  const base = outDir.replace(/\/?$/, "/");
  const written: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(`${dir}${e.name}/`);
      else written.push(`${dir}${e.name}`.slice(base.length));
    }
  };
  await walk(base);
  return written.sort();
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--out");
  const out = i >= 0 ? Deno.args[i + 1] : DEFAULT_OUT;
  const started = performance.now();
  const files = await buildNpm(out);
  console.log(
    `npm package written to ${out}: ${files.length} files ` +
      `in ${Math.round(performance.now() - started)} ms`,
  );
}

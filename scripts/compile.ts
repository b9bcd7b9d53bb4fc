/**
 * `deno task compile`: builds the server as one binary with `deno compile`,
 * the migrations and the password worker embedded, and the same narrow
 * permission set `deno task start` uses (deno.json "permissions.server").
 *
 *   deno task compile                      # dist/authsvc
 *   deno task compile -- --output ./authsvc --target x86_64-unknown-linux-gnu
 *   ./dist/authsvc serve                   # or migrate, version, --help
 *
 * `deno compile` needs the `denort` runtime for the target, which it downloads
 * from dl.deno.land. Where that cannot be reached (offline build machines),
 * this script stops with a message saying so and exits 1; point DENORT_BIN at
 * a local denort binary to build without the download.
 */
const ROOT = new URL("../", import.meta.url);

function parseArgs(args: string[]): { output: string; target?: string } {
  let output = "dist/authsvc";
  let target: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") continue;
    else if (a === "--output" || a === "-o") output = args[++i] ?? output;
    else if (a.startsWith("--output=")) output = a.slice(9);
    else if (a === "--target") target = args[++i];
    else if (a.startsWith("--target=")) target = a.slice(9);
    else if (a === "--help" || a === "-h") {
      console.log("usage: deno task compile [-- --output PATH] [--target TRIPLE]");
      Deno.exit(0);
    } else {
      console.error(`compile: unknown argument "${a}"`);
      Deno.exit(2);
    }
  }
  return { output, target };
}

/** True when `deno compile` failed because it could not fetch its runtime. */
export function isRuntimeDownloadFailure(stderr: string): boolean {
  return /dl\.deno\.land|denort|Setting up base binary/i.test(stderr) &&
    /error sending request|dns error|Connect|timed out|failed to download|Download/i.test(stderr);
}

async function main(): Promise<number> {
  const { output, target } = parseArgs(Deno.args);
  const args = [
    "compile",
    "-P=server",
    // A request's signal aborts when its client goes away, not after every answer (deno.json).
    "--unstable-no-legacy-abort",
    "--include",
    "migrations",
    "--include",
    "server/auth/bcrypt_worker.ts",
    "--include",
    "server/console/assets",
    "--output",
    output,
    ...(target ? ["--target", target] : []),
    "server/main.ts",
  ];
  console.log(`deno ${args.join(" ")}`);
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "inherit",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  if (out.success) {
    if (stderr.trim()) console.error(stderr.trimEnd());
    console.log(`built ${output}: run "${output} serve" (or migrate, version, --help)`);
    return 0;
  }
  if (isRuntimeDownloadFailure(stderr)) {
    console.error(
      [
        "compile: cannot build the binary on this machine: `deno compile` must download its",
        "runtime (denort) from https://dl.deno.land, and that download failed (no network access).",
        "Run `deno task compile` where dl.deno.land is reachable, or set DENORT_BIN to a local",
        "denort binary of the same Deno version. `deno task start` runs the server without compiling.",
      ].join("\n"),
    );
    const last = stderr.trim().split("\n").filter((l) => /error|dns/i.test(l)).pop();
    if (last) console.error(`(deno said: ${last.trim()})`);
    return 1;
  }
  console.error(stderr.trimEnd());
  return out.code || 1;
}

if (import.meta.main) Deno.exit(await main());

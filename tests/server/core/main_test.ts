/** server/main.ts as a process: the command line, configuration errors, migrate, shutdown. */
import assert from "node:assert/strict";
import { freePort, runServerCommand, startServerProcess } from "../../helpers/process.ts";
import { VERSION as CLIENT_VERSION } from "../../../mod.ts";

/** The version deno.json gives, the one place it is written. */
const VERSION: string =
  JSON.parse(await Deno.readTextFile(new URL("../../../deno.json", import.meta.url))).version;

Deno.test("main --help lists the commands; version prints the version", async () => {
  const help = await runServerCommand(["--help"]);
  assert.equal(help.code, 0);
  for (const word of ["serve", "migrate", "version", "--env-file"]) {
    assert.ok(help.stdout.includes(word), `--help mentions ${word}`);
  }
  const v = await runServerCommand(["version"]);
  assert.equal(v.code, 0);
  assert.equal(v.stdout.trim(), VERSION);
  // The client library cannot import deno.json (npm and browser builds): it must say the same.
  assert.equal(CLIENT_VERSION, VERSION);
  const bad = await runServerCommand(["frobnicate"]);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /frobnicate/);
});

Deno.test("a bad configuration stops the start with one line per problem, exit 1", async () => {
  const r = await runServerCommand(["serve"], {
    AUTHSVC_JWT_SECRET: "",
    AUTHSVC_JWT_EXP: "soon",
    AUTHSVC_MAILER_AUTOCONFIRM: "maybe",
    AUTHSVC_SITE_URL: "not a url",
  });
  assert.equal(r.code, 1);
  // one indented line per problem under the heading (Deno may print its own warnings first)
  const lines = r.stderr.split("\n").filter((l) => l.startsWith("  ")).map((l) => l.trim());
  assert.equal(lines.length, 4, r.stderr);
  assert.ok(lines.some((l) => l.startsWith("AUTHSVC_JWT_SECRET: required")));
  assert.ok(lines.some((l) => l.startsWith("AUTHSVC_JWT_EXP: expected an integer")));
  assert.ok(lines.some((l) => l.startsWith("AUTHSVC_MAILER_AUTOCONFIRM: expected true or false")));
  assert.ok(lines.some((l) => l.startsWith("AUTHSVC_SITE_URL: expected an http(s) URL")));
});

Deno.test("an --env-file that cannot be read stops the start naming it, exit 1", async () => {
  const r = await runServerCommand(["serve", "--env-file", "/nonexistent/authsvc.env"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /--env-file \/nonexistent\/authsvc\.env cannot be read/);
});

Deno.test("migrate applies the migrations once, then has nothing to do", async () => {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-migrate-" });
  try {
    const env = {
      AUTHSVC_DB_DATA_DIR: dir,
      AUTHSVC_DB_NAMESPACE: "mig",
      AUTHSVC_OPERATOR_TOKEN: "legacy",
    };
    const first = await runServerCommand(["migrate"], env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /applied migration 0001_init\.sql/);
    assert.match(first.stdout, /AUTHSVC_OPERATOR_TOKEN is deprecated/);
    const again = await runServerCommand(["migrate"], env);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /no pending migrations/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SIGTERM: requests in flight are answered, then the process exits 0", async () => {
  const p = await startServerProcess({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    // Each sign-up hashes a password (tens of ms of CPU, queued on the worker
    // pool): once the first has answered, the rest are still being worked on.
    const signUp = (i: number) =>
      fetch(`${p.url}/signup`, {
        method: "POST",
        headers: { "content-type": "application/json", connection: "close" },
        body: JSON.stringify({ email: `inflight-${i}@example.com`, password: "secret-pw-1" }),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    const first = signUp(0);
    const rest = Array.from({ length: 12 }, (_, i) => signUp(i + 1));
    assert.equal((await first).status, 200);
    const code = p.stop("SIGTERM");
    const answers = await Promise.allSettled(rest);
    const answered = answers.filter((a) => a.status === "fulfilled").map((a) => a.value);
    assert.ok(answered.length > 0);
    for (const a of answered) assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(await code, 0);
    assert.ok(p.stdout.some((l) => l.includes("SIGTERM received")), p.stdout.join("\n"));
    assert.ok(p.stdout.some((l) => l.includes('"stopped"')), p.stdout.join("\n"));
  } finally {
    await p.stop("SIGKILL");
  }
});

Deno.test("a fresh clone starts on the committed .env.example with no other step", async () => {
  const root = new URL("../../../", import.meta.url);
  const dir = await Deno.makeTempDir({ prefix: "authsvc-clone-" });
  await Deno.copyFile(new URL(".env.example", root), `${dir}/.env.example`);
  const env: Record<string, string> = { PORT: String(freePort()), AUTHSVC_API_HOST: "127.0.0.1" };
  for (const k of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) env[k] = v;
  }
  // what `deno task start` runs, from a directory holding only .env.example
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-P=server",
      "--config",
      new URL("deno.json", root).pathname,
      new URL("server/main.ts", root).pathname,
    ],
    cwd: dir,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  try {
    let health = 0;
    for (let i = 0; i < 600 && health !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      health = await fetch(`http://127.0.0.1:${env.PORT}/health`)
        .then(async (r) => (await r.body?.cancel(), r.status))
        .catch(() => 0);
    }
    assert.equal(health, 200);
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0);
    const [stdout, stderr] = await output;
    assert.match(stdout, /using the defaults of \.\/\.env\.example/, stderr);
    assert.ok(
      (await Deno.stat(`${dir}/.authsvc/data`)).isDirectory,
      "PGlite data under ./.authsvc",
    );
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
    await output;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SIGINT (Ctrl-C) stops the server like SIGTERM: exit 0, database closed", async () => {
  const p = await startServerProcess({});
  try {
    assert.equal(await p.stop("SIGINT"), 0);
    assert.ok(p.stdout.some((l) => l.includes("SIGINT received")), p.stdout.join("\n"));
    assert.ok(p.stdout.some((l) => l.includes('"stopped"')), p.stdout.join("\n"));
  } finally {
    await p.stop("SIGKILL");
  }
});

/**
 * Attack: minting admin tokens with a signing secret that is public (issue
 * 17, item 5). A fresh clone started with `deno task start` and no
 * environment must not sign with a secret written in the repository; a
 * configured published or short secret stops the start.
 */
import assert from "node:assert/strict";
import { jose } from "../../../deps.ts";
import { PUBLISHED_JWT_SECRETS } from "../../../server/config.ts";
import { freePort, runServerCommand } from "../../helpers/process.ts";

/** The secret this repository's .env.example used to carry (it stays in its history). */
const FORMER_EXAMPLE_SECRET = "local-development-secret-change-me-0123456789";

const ROOT = new URL("../../../", import.meta.url);

async function serviceRoleToken(secret: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return await new jose.SignJWT({ role: "service_role" })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(new TextEncoder().encode(secret));
}

/**
 * `deno task start` in a directory holding only the committed .env.example,
 * with no environment beyond what Deno itself needs. Resolves once the
 * server logged that it listens.
 */
async function startFreshClone(dir: string) {
  await Deno.copyFile(new URL(".env.example", ROOT), `${dir}/.env.example`);
  const port = freePort();
  const env: Record<string, string> = { PORT: String(port), AUTHSVC_API_HOST: "127.0.0.1" };
  for (const k of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) env[k] = v;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-P=server",
      "--config",
      new URL("deno.json", ROOT).pathname,
      new URL("server/main.ts", ROOT).pathname,
      "serve",
    ],
    cwd: dir,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines: string[] = [];
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  let listening = false;
  while (!listening) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += value;
    const parts = rest.split("\n");
    rest = parts.pop()!;
    lines.push(...parts);
    listening = parts.some((l) => l.includes("listening on"));
  }
  const drained = (async () => {
    while (!(await reader.read()).done) { /* keep the pipe flowing */ }
  })();
  if (!listening) {
    await drained;
    throw new Error(`the server did not start: ${lines.join("\n")}\n${await stderr}`);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    lines,
    async stop(): Promise<number> {
      try {
        child.kill("SIGTERM");
      } catch { /* exited */ }
      const { code } = await child.status;
      await drained;
      await stderr;
      return code;
    },
  };
}

Deno.test("a fresh clone refuses an admin call signed with the published example secret", async () => {
  assert.ok(PUBLISHED_JWT_SECRETS.includes(FORMER_EXAMPLE_SECRET));
  const example = await Deno.readTextFile(new URL(".env.example", ROOT));
  assert.doesNotMatch(example, /^AUTHSVC_JWT_SECRET=/m, ".env.example names no secret");
  const dir = await Deno.makeTempDir({ prefix: "authsvc-secret-" });
  const srv = await startFreshClone(dir);
  try {
    const kept = `${dir}/.authsvc/data/jwt_secret`;
    const secret = (await Deno.readTextFile(kept)).trim();
    assert.ok(secret.length >= 43, "at least 32 random bytes");
    assert.equal((await Deno.stat(kept)).mode! & 0o077, 0, "readable by its owner only");
    const log = srv.lines.join("\n");
    assert.match(log, /generated a random JWT secret/);
    assert.ok(!log.includes(secret), "the secret never reaches the log");

    for (const published of PUBLISHED_JWT_SECRETS) {
      const res = await fetch(`${srv.url}/admin/users`, {
        headers: { authorization: `Bearer ${await serviceRoleToken(published)}` },
      });
      const body = await res.json();
      assert.equal(res.status, 403, JSON.stringify(body));
      assert.equal(body.error_code, "bad_jwt");
    }
    // The kept secret is the one in force: the admin API itself works.
    const ok = await fetch(`${srv.url}/admin/users`, {
      headers: { authorization: `Bearer ${await serviceRoleToken(secret)}` },
    });
    assert.equal(ok.status, 200, await ok.text());
    assert.equal(await srv.stop(), 0);

    // A restart keeps the secret: tokens signed before it still verify.
    const again = await startFreshClone(dir);
    try {
      assert.match(again.lines.join("\n"), /using the JWT secret kept in/);
      const still = await fetch(`${again.url}/admin/users`, {
        headers: { authorization: `Bearer ${await serviceRoleToken(secret)}` },
      });
      assert.equal(still.status, 200, await still.text());
    } finally {
      assert.equal(await again.stop(), 0);
    }
  } finally {
    await srv.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a published or short signing secret stops the start with a clear message", async () => {
  for (
    const [secret, why] of [
      [FORMER_EXAMPLE_SECRET, /AUTHSVC_JWT_SECRET: is a published example secret/],
      ["super-secret-jwt-token-with-at-least-32-characters-long", /published example secret/],
      ["short-but-not-empty-secret", /AUTHSVC_JWT_SECRET: shorter than 32 bytes/],
    ] as const
  ) {
    const r = await runServerCommand(["serve"], { AUTHSVC_JWT_SECRET: secret });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, why);
    assert.match(r.stderr, /AUTHSVC_JWT_ALLOW_WEAK_SECRET/, "names the development switch");
    assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret), "never prints it");
  }
  // The development switch lets a short secret through (migrate reads the same configuration).
  const dev = await runServerCommand(["migrate"], {
    AUTHSVC_JWT_SECRET: "short-dev-secret",
    AUTHSVC_JWT_ALLOW_WEAK_SECRET: "true",
  });
  assert.equal(dev.code, 0, dev.stderr);
});

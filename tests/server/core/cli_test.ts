/**
 * The command line as its documentation shows it (issue 46, items 1 and 4):
 * `deno task start -- --help`, `-- --env-file FILE`, `-- healthcheck`, and
 * the first operator's `admin create-user`, `admin set-role` and
 * `admin token`, each run as a process.
 */
import assert from "node:assert/strict";
import { jose } from "../../../deps.ts";
import {
  freePort,
  processEnv,
  runServerCommand,
  startServerProcess,
} from "../../helpers/process.ts";
import { TEST_JWT_SECRET } from "../../helpers/server.ts";

const ROOT = new URL("../../../", import.meta.url);

/** `deno task start -- <args>`, the form the docs show; `env` is the whole environment. */
function task(args: string[], env: Record<string, string>) {
  return new Deno.Command(Deno.execPath(), {
    args: ["task", "--config", new URL("deno.json", ROOT).pathname, "start", "--", ...args],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

async function taskOutput(args: string[], env: Record<string, string>) {
  const out = await task(args, env).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function claimsOf(token: string) {
  const { payload } = await jose.jwtVerify(token, new TextEncoder().encode(TEST_JWT_SECRET));
  return payload;
}

async function passwordGrant(url: string, email: string, password: string) {
  const res = await fetch(`${url}/token?grant_type=password`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  return { status: res.status, body: await res.json() };
}

/** The password `admin create-user` printed. */
function printedPassword(stdout: string): string {
  const m = /^password: (\S+)/m.exec(stdout);
  assert.ok(m, stdout);
  return m[1];
}

Deno.test("deno task start -- --help and -- version answer instead of 'unknown argument'", async () => {
  const env = processEnv();
  const help = await taskOutput(["--help"], env);
  assert.equal(help.code, 0, help.stderr);
  for (const word of ["serve", "migrate", "healthcheck", "admin", "--env-file"]) {
    assert.ok(help.stdout.includes(word), `--help mentions ${word}`);
  }
  assert.doesNotMatch(help.stderr, /unknown argument/);
  const admin = await taskOutput(["admin", "--help"], env);
  assert.equal(admin.code, 0, admin.stderr);
  assert.match(admin.stdout, /create-user --email ADDRESS/);
  const version = await taskOutput(["version"], env);
  assert.equal(version.code, 0);
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+/);
});

Deno.test("deno task start -- --env-file FILE serves; -- healthcheck finds it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-task-" });
  const port = freePort();
  const file = `${dir}/prod.env`;
  await Deno.writeTextFile(
    file,
    [
      "AUTHSVC_SITE_URL=http://localhost:3000",
      "AUTHSVC_API_EXTERNAL_URL=http://localhost:8081",
      "AUTHSVC_DB_DATA_DIR=memory://",
      "AUTHSVC_API_HOST=127.0.0.1",
      `PORT=${port}`,
    ].join("\n"),
  );
  // Only what Deno needs: the settings come from the file.
  const env: Record<string, string> = {};
  for (const k of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) env[k] = v;
  }
  const child = task(["--env-file", file], env).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "";
  try {
    // Its log says when it listens (an event, not a clock).
    while (!/listening on/.test(stdout)) {
      const { value, done } = await lines.read();
      if (done) assert.fail(`the server exited:\n${stdout}\n${await stderr}`);
      stdout += value;
    }
    assert.match(stdout, new RegExp(`listening on http://127\\.0\\.0\\.1:${port}`));
    const healthy = await taskOutput(["healthcheck", "--env-file", file], env);
    assert.equal(healthy.code, 0, healthy.stderr);
    assert.match(healthy.stdout, new RegExp(`healthy: http://127\\.0\\.0\\.1:${port}/health`));
    child.kill("SIGTERM"); // deno task hands it on to the server
    assert.equal((await child.status).code, 0);
    // Nothing answers any more.
    const after = await taskOutput(["healthcheck", "--env-file", file], env);
    assert.equal(after.code, 1);
    assert.match(after.stderr, /unhealthy/);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* exited */ }
    await child.status;
    await lines.cancel();
    await stderr;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("admin token prints an admin token of the given lifetime that the admin API takes", async () => {
  const r = await runServerCommand(["admin", "token", "--role", "service_role", "--ttl", "1h"]);
  assert.equal(r.code, 0, r.stderr);
  const token = r.stdout.trim();
  const claims = await claimsOf(token);
  assert.equal(claims.role, "service_role");
  assert.equal(claims.exp! - claims.iat!, 3600);
  assert.match(r.stderr, /service_role token, valid until/);
  const p = await startServerProcess({});
  try {
    const res = await fetch(`${p.url}/admin/users`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    await p.stop();
  }
  const long = await runServerCommand(["admin", "token", "--ttl", "30d"]);
  const c = await claimsOf(long.stdout.trim());
  assert.equal(c.exp! - c.iat!, 30 * 86400);
});

Deno.test("admin create-user through the running server: the operator signs in with the printed password", async () => {
  const p = await startServerProcess({ AUTHSVC_CONSOLE_ENABLED: "true" });
  try {
    const email = `operator-${crypto.randomUUID().slice(0, 8)}@example.com`;
    // The same settings as the server's: it is found at PORT and AUTHSVC_API_HOST.
    const r = await runServerCommand(
      ["admin", "create-user", "--email", email, "--role", "supabase_admin"],
      { PORT: String(p.port), AUTHSVC_CONSOLE_ENABLED: "true" },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`created ${email}`));
    assert.match(r.stdout, /may sign in to the console at http:\/\/localhost:8081\/console\//);
    const signIn = await passwordGrant(p.url, email, printedPassword(r.stdout));
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    assert.equal((await claimsOf(signIn.body.access_token)).role, "supabase_admin");
    // A second create-user for the address says how to give the role instead.
    const again = await runServerCommand(
      ["admin", "create-user", "--email", email, "--role", "supabase_admin"],
      { PORT: String(p.port) },
    );
    assert.equal(again.code, 1);
    assert.match(again.stderr, /exists: give them a role with `admin set-role --email/);
  } finally {
    await p.stop();
  }
});

Deno.test("admin create-user and set-role on a fresh data directory, before any server ran", async () => {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-admin-" });
  const env = { AUTHSVC_DB_DATA_DIR: dir, AUTHSVC_DB_NAMESPACE: "" };
  try {
    const email = "first-operator@example.com";
    // No AUTHSVC_JWT_SECRET: the command generates the installation's secret, as a first start would.
    const unset = ["AUTHSVC_JWT_SECRET"];
    const created = await runServerCommand(
      ["admin", "create-user", "--email", email, "--password-stdin"],
      env,
      { stdin: "operator-password-1\n", unset },
    );
    assert.equal(created.code, 0, created.stderr);
    assert.doesNotMatch(created.stdout, /^password:/m, "a given password is not printed");
    assert.match(created.stdout, /role authenticated opens neither the console nor the admin API/);
    const role = await runServerCommand(
      ["admin", "set-role", "--email", email, "--role", "supabase_admin"],
      env,
      { unset },
    );
    assert.equal(role.code, 0, role.stderr);
    assert.match(role.stdout, /now has role supabase_admin/);
    const missing = await runServerCommand(
      ["admin", "set-role", "--email", "nobody@example.com", "--role", "supabase_admin"],
      env,
      { unset },
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no user has the e-mail nobody@example\.com/);
    // The server started on that directory, with the secret kept there, lets the operator in.
    const secret = (await Deno.readTextFile(`${dir}/jwt_secret`)).trim();
    const p = await startServerProcess({ ...env, AUTHSVC_JWT_SECRET: secret });
    try {
      const signIn = await passwordGrant(p.url, email, "operator-password-1");
      assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
      const { payload } = await jose.jwtVerify(
        signIn.body.access_token,
        new TextEncoder().encode(secret),
      );
      assert.equal(payload.role, "supabase_admin");
    } finally {
      await p.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("admin: a usage mistake exits 2 naming it; a token needs a secret that outlives it", async () => {
  for (
    const [args, expected] of [
      [["admin", "frobnicate"], /unknown admin command "frobnicate"/],
      [["admin", "create-user"], /create-user needs --email/],
      [["admin", "token", "--ttl", "soon"], /--ttl: expected a duration like 30m, 12h or 30d/],
      [["admin", "token", "--bogus"], /unknown option "--bogus"/],
    ] as const
  ) {
    const r = await runServerCommand([...args]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, expected);
  }
  // No AUTHSVC_JWT_SECRET and no server started yet: no secret exists to sign with.
  const dir = await Deno.makeTempDir({ prefix: "authsvc-admin-" });
  try {
    const r = await runServerCommand(["admin", "token"], { AUTHSVC_DB_DATA_DIR: dir }, {
      unset: ["AUTHSVC_JWT_SECRET"],
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /start the server once .* or set AUTHSVC_JWT_SECRET/);
    assert.equal(r.stdout, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

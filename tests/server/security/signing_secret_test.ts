/**
 * Attack: minting admin tokens with a signing secret that is public (issue
 * 17, item 5; issue 38, item 6). A fresh clone started with `deno task start`
 * and no environment must not sign with a secret written in the repository; a
 * configured published or short secret stops the start, whether it was
 * published here, in GoTrue's examples, in Supabase's self-hosting example or
 * by the Supabase CLI (server/config/published_secrets.ts).
 */
import assert from "node:assert/strict";
import { jose } from "../../../deps.ts";
import { ConfigError, PUBLISHED_JWT_SECRETS, readConfig } from "../../../server/config/mod.ts";
import { BASE_ENV } from "../../helpers/server.ts";
import { runServerCommand } from "../../helpers/process.ts";
import { copyEnvExample, runInCheckout, startInCheckout } from "./_checkout.ts";

const ROOT = new URL("../../../", import.meta.url);

/** The secret this repository's .env.example used to carry (it stays in its history). */
const FORMER_EXAMPLE_SECRET = "local-development-secret-change-me-0123456789";

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
 * with no environment beyond what Deno itself needs.
 */
async function startFreshClone(dir: string) {
  await copyEnvExample(dir);
  return await startInCheckout(dir);
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

/**
 * The example API keys published with the example secrets: Supabase's self-hosting
 * `docker/.env.example` (ANON_KEY, SERVICE_ROLE_KEY) and the Supabase CLI's local stack
 * (`supabase status`). Whoever has the secret behind them can sign any role.
 */
const EXAMPLE_KEYS: Record<string, string> = {
  "self-hosting ANON_KEY":
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyAgCiAgICAicm9sZSI6ICJhbm9uIiwKICAgICJpc3MiOiAic3VwYWJhc2UtZGVtbyIsCiAgICAiaWF0IjogMTY0MTc2OTIwMCwKICAgICJleHAiOiAxNzk5NTM1NjAwCn0.dc_X5iR_VP_qT0zsiyj_I_OZ2T9FtRU2BBNWN8Bu4GE",
  "self-hosting SERVICE_ROLE_KEY":
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyAgCiAgICAicm9sZSI6ICJzZXJ2aWNlX3JvbGUiLAogICAgImlzcyI6ICJzdXBhYmFzZS1kZW1vIiwKICAgICJpYXQiOiAxNjQxNzY5MjAwLAogICAgImV4cCI6IDE3OTk1MzU2MDAKfQ.DaYlNEoUrrEn2Ig7tqibS-PHK5vgusbcbo7X36XVt4Q",
  "CLI anon key":
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZS1kZW1vIiwicm9sZSI6ImFub24iLCJleHAiOjE5ODM4MTI5OTZ9.CRXP1A7WOeoJeXxjNni43kdQwgnWNReilDMblYTn_I0",
  "CLI service_role key":
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZS1kZW1vIiwicm9sZSI6InNlcnZpY2Vfcm9sZSIsImV4cCI6MTk4MzgxMjk5Nn0.EGIM96RAZx35lJzdJsyH-qQwv8Hdp7fsn3W0YpN81IU",
};

/** The published secret a key is signed with, or undefined. */
async function secretOf(key: string): Promise<string | undefined> {
  for (const secret of PUBLISHED_JWT_SECRETS) {
    try {
      await jose.compactVerify(key, new TextEncoder().encode(secret));
      return secret;
    } catch { /* another one */ }
  }
  return undefined;
}

Deno.test("Supabase's self-hosting example secret, as GoTrue's GOTRUE_JWT_SECRET, stops the start", async () => {
  const selfHosting = "your-super-secret-jwt-token-with-at-least-32-characters-long";
  const dir = await Deno.makeTempDir({ prefix: "authsvc-selfhost-" });
  try {
    await copyEnvExample(dir);
    // The self-hosting compose file passes JWT_SECRET on as GOTRUE_JWT_SECRET.
    const r = await runInCheckout(dir, {
      GOTRUE_JWT_SECRET: selfHosting,
      AUTHSVC_DB_DATA_DIR: "memory://",
    }, ["migrate"]);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /AUTHSVC_JWT_SECRET \(set as GOTRUE_JWT_SECRET\): is a published/);
    assert.match(r.stderr, /AUTHSVC_JWT_ALLOW_WEAK_SECRET/, "names the development switch");
    assert.ok(!r.stderr.includes(selfHosting) && !r.stdout.includes(selfHosting));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every published example secret, and the secret of the example API keys, stops the start", async () => {
  for (const [name, key] of Object.entries(EXAMPLE_KEYS)) {
    assert.ok(await secretOf(key), `the secret behind the ${name} is refused`);
  }
  const problemsOf = (env: Record<string, string>): string[] => {
    try {
      readConfig({ ...BASE_ENV, ...env });
      return [];
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      return e.problems;
    }
  };
  for (const secret of PUBLISHED_JWT_SECRETS) {
    for (const name of ["AUTHSVC_JWT_SECRET", "GOTRUE_JWT_SECRET"]) {
      const env: Record<string, string> = { [name]: secret };
      if (name !== "AUTHSVC_JWT_SECRET") env.AUTHSVC_JWT_SECRET = "";
      const problems = problemsOf(env);
      assert.ok(
        problems.some((p) => /AUTHSVC_JWT_SECRET.*: (is a published|shorter than)/.test(p)),
        `${name}=${secret.slice(0, 12)}…: ${problems.join("; ")}`,
      );
      assert.ok(!problems.join("\n").includes(secret), "never printed");
      assert.deepEqual(problemsOf({ ...env, AUTHSVC_JWT_ALLOW_WEAK_SECRET: "true" }), []);
    }
  }
  // The same secret as the symmetric key of a JWT_KEYS set (Supabase's add-new-auth-keys.sh
  // puts JWT_SECRET there) verifies forged tokens just as well.
  const selfHosting = "your-super-secret-jwt-token-with-at-least-32-characters-long";
  const oct = {
    kty: "oct",
    k: jose.base64url.encode(selfHosting),
    alg: "HS256",
    key_ops: ["sign", "verify"],
  };
  const problems = problemsOf({ AUTHSVC_JWT_KEYS: JSON.stringify([oct]) });
  assert.ok(
    problems.some((p) => /AUTHSVC_JWT_KEYS: key 0 \(kty oct\) is a published/.test(p)),
    problems.join("; "),
  );
});

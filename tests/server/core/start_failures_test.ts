/**
 * A start that cannot go on says so in one line naming what to change, exits
 * 1, and shows no stack trace unless LOG_LEVEL=debug (issue 46, item 2). Each
 * case runs server/main.ts as a process.
 */
import assert from "node:assert/strict";
import { freePort, runServerCommand, startServerProcess } from "../../helpers/process.ts";
import { cstrings, message, startFakePg } from "../../helpers/fake_pg.ts";

/** The one `authsvc: cannot start` line of a failed start, checked for no stack trace. */
function failureLine(r: { code: number; stdout: string; stderr: string }): string {
  assert.equal(r.code, 1, `exit code 1:\n${r.stderr}\n${r.stdout}`);
  const lines = r.stderr.split("\n").filter((l) => l.startsWith("authsvc: cannot start"));
  assert.equal(lines.length, 1, r.stderr);
  assert.doesNotMatch(r.stderr, /^\s+at /m, "no stack trace without LOG_LEVEL=debug");
  assert.doesNotMatch(r.stderr, /Uncaught/);
  return lines[0];
}

async function tempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-start-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a port in use stops the start before the database is touched", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  // The database is a listener that counts connections: none may arrive.
  const db = startFakePg(async (s) => await s.startup());
  try {
    const r = await runServerCommand(["serve"], {
      PORT: String(port),
      DATABASE_URL: `postgres://u@127.0.0.1:${db.port}/auth`,
    });
    const line = failureLine(r);
    assert.match(line, new RegExp(`port ${port} is in use .*set PORT to a free port`));
    assert.equal(db.sessions.length, 0, "no connection to the database was made");
  } finally {
    taken.close();
    await db.close();
  }
});

Deno.test("each PostgreSQL connection failure is one line naming DATABASE_URL", async () => {
  // Scripted servers: an ErrorResponse with the SQLSTATE PostgreSQL sends, or silence.
  const refuse = (code: string, text: string) =>
    startFakePg(async (s) => {
      await s.startup();
      await s.send(message("E", cstrings("SFATAL", "VFATAL", `C${code}`, `M${text}`, "")));
      s.conn.close();
    });
  const badPassword = refuse("28P01", 'password authentication failed for user "auth"');
  const busy = refuse("53300", "sorry, too many clients already");
  const silent = startFakePg(async (s) => {
    await s.read(); // never answers
  });
  const closed = freePort();
  const pg = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";
  const withDb = (name: string) => {
    const u = new URL(pg);
    u.pathname = `/${name}`;
    return u.href;
  };
  const cases: [string, RegExp][] = [
    [`postgres://auth@127.0.0.1:${closed}/auth`, /Connection refused.*check the host and port/],
    [
      "postgres://auth@db.invalid:5432/auth",
      /db\.invalid.*check the host and port in DATABASE_URL/,
    ],
    [
      `postgres://auth:wrong@127.0.0.1:${badPassword.port}/auth`,
      /28P01.*check the user and password/,
    ],
    [`postgres://auth@127.0.0.1:${busy.port}/auth`, /too many clients.*AUTHSVC_DB_MAX_POOL_SIZE/],
    [
      `postgres://auth@127.0.0.1:${silent.port}/auth?connect_timeout=1`,
      /timed out.*check the host in DATABASE_URL/,
    ],
    [withDb("no_such_database_46"), /no_such_database_46.*create that database/],
    [
      `postgres://auth@127.0.0.1:${badPassword.port}/auth?sslmode=require`,
      /TLS.*check sslmode in DATABASE_URL/,
    ],
    ["mysql://auth@127.0.0.1/auth", /DATABASE_URL must start with postgres:\/\//],
  ];
  try {
    for (const [url, expected] of cases) {
      const line = failureLine(await runServerCommand(["serve"], { DATABASE_URL: url }));
      assert.match(line, expected, url);
      assert.match(line, /DATABASE_URL/, url);
    }
  } finally {
    await Promise.all([badPassword.close(), busy.close(), silent.close()]);
  }
});

Deno.test("LOG_LEVEL=debug adds the stack trace to the one line", async () => {
  const r = await runServerCommand(["serve"], {
    DATABASE_URL: `postgres://auth@127.0.0.1:${freePort()}/auth`,
    LOG_LEVEL: "debug",
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /authsvc: cannot start: the database \(DATABASE_URL\) cannot be reached/);
  assert.match(r.stderr, /^\s+at /m, "the stack follows with LOG_LEVEL=debug");
});

Deno.test("a second server on the same embedded data directory is refused, naming the first", async () => {
  await tempDir(async (dir) => {
    const first = await startServerProcess({ AUTHSVC_DB_DATA_DIR: dir });
    try {
      const holder = JSON.parse(await Deno.readTextFile(`${dir}/authsvc.pid`));
      const line = failureLine(
        await runServerCommand(["serve"], { AUTHSVC_DB_DATA_DIR: dir, PORT: String(freePort()) }),
      );
      assert.match(
        line,
        new RegExp(`AUTHSVC_DB_DATA_DIR ${dir} is in use by process ${holder.pid}`),
      );
      assert.match(line, /main\.ts serve/, "the other process's command");
      assert.match(line, /give this one another AUTHSVC_DB_DATA_DIR/);
      // The first server goes on serving.
      const res = await fetch(`${first.url}/health`);
      assert.equal(res.status, 200);
      await res.body?.cancel();
    } finally {
      assert.equal(await first.stop(), 0);
    }
    // Once it stopped, the directory is free again.
    const again = await runServerCommand(["migrate"], { AUTHSVC_DB_DATA_DIR: dir });
    assert.equal(again.code, 0, again.stderr);
  });
});

Deno.test("a data directory that holds other files is refused, naming them", async () => {
  await tempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/notes.txt`, "not a database");
    const line = failureLine(await runServerCommand(["serve"], { AUTHSVC_DB_DATA_DIR: dir }));
    assert.match(line, new RegExp(`AUTHSVC_DB_DATA_DIR ${dir} holds files but no database`));
    assert.match(line, /\(notes\.txt\)/);
    assert.match(line, /point AUTHSVC_DB_DATA_DIR at a new or empty directory/);
    assert.equal(await Deno.readTextFile(`${dir}/notes.txt`), "not a database", "left as it was");
  });
  await tempDir(async (dir) => {
    const file = `${dir}/data`;
    await Deno.writeTextFile(file, "");
    const line = failureLine(await runServerCommand(["serve"], { AUTHSVC_DB_DATA_DIR: file }));
    assert.match(line, /is a file, not a directory/);
  });
});

Deno.test("a kept jwt_secret does not make the directory unusable for the embedded database", async () => {
  await tempDir(async (dir) => {
    // A start on PostgreSQL keeps its generated secret in the data directory ...
    const secret = "kept-secret-of-an-earlier-start-0123456789abcdef";
    await Deno.writeTextFile(`${dir}/jwt_secret`, `${secret}\n`, { mode: 0o600 });
    // ... and the embedded database still opens there afterwards, keeping the secret.
    const r = await runServerCommand(["migrate"], { AUTHSVC_DB_DATA_DIR: dir }, {
      unset: ["AUTHSVC_JWT_SECRET"],
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /using the JWT secret kept in/);
    assert.ok((await Deno.stat(`${dir}/PG_VERSION`)).isFile, "PGlite initialised the directory");
    assert.equal((await Deno.readTextFile(`${dir}/jwt_secret`)).trim(), secret);
    assert.equal((await Deno.stat(`${dir}/jwt_secret`)).mode! & 0o777, 0o600);
  });
});

Deno.test("an --env-file that cannot be read stops the start naming it", async () => {
  await tempDir(async (dir) => {
    for (
      const [path, why] of [[`${dir}/missing.env`, "no such file"], [dir, "it is a directory"]]
    ) {
      const line = failureLine(await runServerCommand(["serve", "--env-file", path]));
      assert.ok(line.includes(`--env-file ${path} cannot be read: ${why}`), line);
    }
  });
});

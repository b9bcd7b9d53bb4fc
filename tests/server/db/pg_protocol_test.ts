/**
 * The PostgreSQL client (server/db/pg/) against servers that misbehave: a fake server
 * (tests/helpers/fake_pg.ts) that skips the end of SCRAM, signs wrongly, asks for a clear-text or
 * MD5 password, asks for a huge SCRAM iteration count or sends frames of impossible length; the
 * machine's PostgreSQL behind a proxy that accepts late (a dial that completes after the connect
 * timeout); and the libpq settings read from connection strings and the environment.
 */
import assert from "node:assert/strict";
import { Connection } from "../../../server/db/pg/connection.ts";
import { MAX_MESSAGE_BYTES } from "../../../server/db/pg/inbox.ts";
import { MAX_SCRAM_ITERATIONS } from "../../../server/db/pg/auth.ts";
import { type ConnectOptions, parseConnectionString } from "../../../server/db/pg/options.ts";
import { PgConnectionError } from "../../../server/db/pg/errors.ts";
import { Pool } from "../../../server/db/pg/pool.ts";
import {
  cstrings,
  dataRow,
  type FakeSession,
  header,
  md5Answer,
  message,
  rowDescription,
  startFakePg,
} from "../../helpers/fake_pg.ts";
import { startLateProxy } from "../../helpers/fault_proxy.ts";
import { BASE_ENV, freshNamespace } from "../../helpers/server.ts";
import { dropNamespaceObjects } from "../../helpers/bench_process.ts";
import { createApp } from "../../../server/app.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { Logger } from "../../../server/observe/log.ts";

const PG_URL = Deno.env.get("DATABASE_URL") ?? "";
const enc = new TextEncoder();
const noEnv = () => undefined;

function options(port: number, query = "", host = "127.0.0.1"): ConnectOptions {
  // in clear unless the test names an sslmode (the fake answers "N" to TLS anyway)
  const q = /sslmode=/.test(query) ? query : `sslmode=disable${query ? `&${query}` : ""}`;
  return parseConnectionString(`postgres://u:pw@${host}:${port}/db?${q}`, noEnv);
}

/** Opens a connection to `port`, runs one query, closes; returns the rows or the error. */
async function tryQuery(opts: ConnectOptions): Promise<unknown> {
  let c: Connection;
  try {
    c = await Connection.open(opts);
  } catch (e) {
    return e;
  }
  try {
    return await c.simple("SELECT 1");
  } catch (e) {
    return e;
  } finally {
    await c.close();
  }
}

function connectionError(e: unknown, code: string, text: RegExp): PgConnectionError {
  assert.ok(e instanceof PgConnectionError, `a PgConnectionError, got ${e}`);
  assert.equal(e.code, code, e.message);
  assert.match(e.message, text);
  return e;
}

/** A fake that authenticates as `auth` says, then answers queries. */
async function withFake(
  auth: (s: FakeSession) => Promise<void>,
  fn: (port: number, sessions: FakeSession[]) => Promise<void>,
): Promise<void> {
  const fake = startFakePg(async (s) => {
    await s.startup();
    await auth(s);
    await s.ready();
    await s.serveQueries();
  });
  try {
    await fn(fake.port, fake.sessions);
  } finally {
    await fake.close();
  }
}

const passwords = (s: FakeSession) => s.received.filter(([t]) => t === "p");

Deno.test("pg auth: a server that completes SCRAM-SHA-256 with the right signature is accepted", () =>
  withFake(async (s) => {
    await s.scram("pw");
    await s.send(s.auth(0));
  }, async (port) => {
    assert.deepEqual(await tryQuery(options(port)), [{ v: "ok" }]);
  }));

Deno.test("pg auth: AuthenticationOk before the server's final SCRAM message is refused", () =>
  withFake(async (s) => {
    await s.scram("pw", { until: "continue" }); // reads the client's proof, never proves its own
    await s.send(s.auth(0));
  }, async (port) => {
    connectionError(
      await tryQuery(options(port)),
      "AUTH_FAILED",
      /before completing SCRAM-SHA-256: the server did not prove that it knows the password/,
    );
  }));

Deno.test("pg auth: AuthenticationOk right after the SCRAM mechanism list is refused", () =>
  withFake(async (s) => {
    await s.scram("pw", { until: "mechanisms" });
    await s.send(s.auth(0));
  }, async (port) => {
    connectionError(await tryQuery(options(port)), "AUTH_FAILED", /before completing SCRAM/);
  }));

Deno.test("pg auth: a wrong SCRAM server signature is refused, as is a server that does not know the password", async () => {
  await withFake(async (s) => {
    await s.scram("pw", { signature: btoa("x".repeat(32)) });
    await s.send(s.auth(0));
  }, async (port) => {
    connectionError(await tryQuery(options(port)), "AUTH_FAILED", /signature is wrong/);
  });
  await withFake(async (s) => {
    await s.scram("another password"); // signs correctly for a password it believes in
    await s.send(s.auth(0));
  }, async (port) => {
    connectionError(await tryQuery(options(port)), "AUTH_FAILED", /signature is wrong/);
  });
});

Deno.test("pg auth: a SCRAM iteration count over the cap is refused without being computed", async () => {
  await withFake(async (s) => {
    await s.scram("pw", { iterations: 2 ** 31 - 1, until: "continue" });
    await s.send(s.auth(0));
  }, async (port, sessions) => {
    connectionError(
      await tryQuery(options(port)),
      "AUTH_FAILED",
      new RegExp(`asks for 2147483647 iterations, more than the ${MAX_SCRAM_ITERATIONS}`),
    );
    // only the SASLInitialResponse went out: no proof was computed or sent
    assert.equal(passwords(sessions[0]).length, 1);
  });
  // the cap itself is accepted
  await withFake(async (s) => {
    await s.scram("pw", { iterations: MAX_SCRAM_ITERATIONS });
    await s.send(s.auth(0));
  }, async (port) => {
    assert.deepEqual(await tryQuery(options(port)), [{ v: "ok" }]);
  });
});

/** A server that asks for a clear-text (3) or MD5 (5) password and accepts whatever comes. */
const askPassword = (code: 3 | 5) => async (s: FakeSession) => {
  await s.send(code === 3 ? s.auth(3) : s.auth(5, new Uint8Array([1, 2, 3, 4])));
  const answer = await s.read();
  if (answer?.[0] !== "p") throw new Error("no password");
  await s.send(s.auth(0));
};

Deno.test("pg auth: clear-text and MD5 passwords are not sent over an unencrypted connection unless require_auth allows them", async () => {
  for (const [code, method, text] of [[3, "password", "clear-text"], [5, "md5", "MD5"]] as const) {
    await withFake(askPassword(code), async (port, sessions) => {
      connectionError(
        await tryQuery(options(port)),
        "AUTH_NOT_ALLOWED",
        new RegExp(`asks for an? ${text} password: refused.*require_auth=${method} allows it`),
      );
      assert.equal(passwords(sessions[0]).length, 0, "no password left the client");
      // prefer, whose server declines TLS, is no different
      connectionError(
        await tryQuery(options(port, "sslmode=prefer")),
        "AUTH_NOT_ALLOWED",
        /refused/,
      );
      assert.deepEqual(await tryQuery(options(port, `require_auth=${method}`)), [{ v: "ok" }]);
      const sent = passwords(sessions.at(-1)!)[0][1];
      assert.equal(
        new TextDecoder().decode(sent),
        (code === 3 ? "pw" : md5Answer("u", "pw", new Uint8Array([1, 2, 3, 4]))) + "\0",
      );
      // a list naming other methods, or a negated one naming this one, still refuses
      connectionError(
        await tryQuery(options(port, "require_auth=scram-sha-256,none")),
        "AUTH_NOT_ALLOWED",
        new RegExp(`require_auth does not allow "${method}"`),
      );
      connectionError(
        await tryQuery(options(port, `require_auth=!${method}`)),
        "AUTH_NOT_ALLOWED",
        /require_auth/,
      );
    });
  }
});

Deno.test("pg auth: require_auth=scram-sha-256 refuses a server that asks for nothing", () =>
  withFake(async (s) => {
    await s.send(s.auth(0)); // trust
  }, async (port) => {
    assert.deepEqual(await tryQuery(options(port)), [{ v: "ok" }], "trust is fine by default");
    connectionError(
      await tryQuery(options(port, "require_auth=scram-sha-256")),
      "AUTH_NOT_ALLOWED",
      /accepted the connection without authentication: refused, require_auth does not allow "none"/,
    );
    connectionError(
      await tryQuery(options(port, "require_auth=!none")),
      "AUTH_NOT_ALLOWED",
      /without authentication/,
    );
  }));

Deno.test("pg auth: SCRAM asked for when require_auth names only md5 is refused before anything is sent", () =>
  withFake(async (s) => {
    await s.scram("pw");
    await s.send(s.auth(0));
  }, async (port, sessions) => {
    connectionError(
      await tryQuery(options(port, "require_auth=md5")),
      "AUTH_NOT_ALLOWED",
      /asks for SCRAM-SHA-256: refused, require_auth does not allow "scram-sha-256"/,
    );
    assert.equal(passwords(sessions[0]).length, 0);
  }));

Deno.test("pg TLS: prefer uses the clear connection when the TLS handshake fails, require does not", async () => {
  const fake = startFakePg(async (s, n) => {
    try {
      await s.startup(n === 1 ? "N" : "S"); // all but the second: a TLS that breaks
    } catch {
      s.conn.close(); // the handshake fails
      return;
    }
    await s.send(s.auth(0));
    await s.ready();
    await s.serveQueries();
  });
  try {
    assert.deepEqual(await tryQuery(options(fake.port, "sslmode=prefer")), [{ v: "ok" }]);
    assert.equal(fake.sessions.length, 2, "one TLS attempt, then one in clear");
    connectionError(
      await tryQuery(options(fake.port, "sslmode=require")),
      "TLS_FAILED",
      /TLS with PostgreSQL at 127\.0\.0\.1:\d+ failed \(sslmode=require\)/,
    );
    assert.equal(fake.sessions.length, 3, "require does not try again in clear");
    // an unreadable sslrootcert is an error, not a reason to go on in clear
    connectionError(
      await tryQuery(options(fake.port, "sslmode=prefer&sslrootcert=/nonexistent/ca.pem")),
      "SSLROOTCERT_UNREADABLE",
      /cannot read sslrootcert \/nonexistent\/ca\.pem/,
    );
    assert.equal(fake.sessions.length, 4, "no attempt in clear after it");
  } finally {
    await fake.close();
  }
});

Deno.test("pg TLS: allow tries TLS after a refusal in clear, and reports that refusal when the server has no TLS", async () => {
  const fake = startFakePg(async (s) => {
    await s.startup();
    await s.send(
      message(
        "E",
        cstrings("SFATAL", "VFATAL", "C28000", "Mno pg_hba.conf entry (no encryption)", ""),
      ),
    );
  });
  try {
    const e = await tryQuery(options(fake.port, "sslmode=allow"));
    connectionError(e, "CONNECTION_REFUSED", /no pg_hba\.conf entry \(no encryption\)/);
    assert.equal(fake.sessions.length, 2, "in clear, then TLS (declined by the server)");
  } finally {
    await fake.close();
  }
});

/** Bad frames, each sent as the answer to "SELECT bad" (after what comes first). */
const BAD_FRAMES: [string, Uint8Array[], RegExp][] = [
  ["length -1", [header("D", -1)], /"D" message with length -1/],
  ["length 0", [header("C", 0)], /"C" message with length 0/],
  ["length 3", [header("Z", 3)], /"Z" message with length 3/],
  ["length 2^31-1", [header("D", 2 ** 31 - 1)], /"D" message with length 2147483647/],
  ["a DataRow over the maximum", [header("D", MAX_MESSAGE_BYTES + 1)], /outside 6\.\.134217728/],
  ["an ErrorResponse of 2 GB", [header("E", 2 ** 31 - 2)], /"E" message with length/],
  ["ReadyForQuery of 6 bytes", [message("Z", enc.encode("II"))], /"Z" message with length 6/],
  ["BackendKeyData of 8 bytes", [message("K", new Uint8Array(4))], /"K" message with length 8/],
  ["a CommandComplete of 40,000 bytes", [header("C", 40_000)], /outside 5\.\.30000/],
  ["an Authentication message of 1 MB", [header("R", 1 << 20)], /"R" message with length/],
  [
    "an unknown type (CopyBothResponse)",
    [message("W", new Uint8Array(3))],
    /unexpected message "W"/,
  ],
  [
    "a DataRow whose column runs past its end",
    [rowDescription("v"), message("D", new Uint8Array([0, 1, 0, 0, 0, 100, 65, 66, 67]))],
    /malformed "D"/,
  ],
  [
    "a DataRow with more columns than described",
    [rowDescription("v"), dataRow("a", "b")],
    /malformed "D"/,
  ],
  [
    "a ParameterStatus without its terminators",
    [message("S", enc.encode("abcd"))],
    /malformed "S"/,
  ],
  [
    "a RowDescription cut short",
    [message("T", new Uint8Array([0, 2, 97, 0, ...new Uint8Array(18), 98]))],
    /malformed "T"/,
  ],
];

Deno.test("pg framing: a frame of impossible length or kind closes that connection only; its queries fail, the pool keeps serving", async (t) => {
  for (const [name, frames, text] of BAD_FRAMES) {
    await t.step(name, async () => {
      let releaseSlow!: () => void;
      const slowHeld = new Promise<void>((r) => releaseSlow = r);
      const fake = startFakePg(async (s) => {
        await s.startup();
        await s.send(s.auth(0));
        await s.ready();
        await s.serveQueries(async (sql) => {
          if (sql === "SELECT slow") await slowHeld;
          if (sql !== "SELECT bad") return;
          await s.send(...frames, enc.encode("garbage that must never be read as a message"));
          return true; // and the connection stays open: the client must close it
        });
      });
      const pool = new Pool(options(fake.port), { max: 2 });
      try {
        const [good, bad] = await Promise.all([pool.reserve(), pool.reserve()]);
        const slow = good.simple("SELECT slow");
        const failed = await Promise.allSettled([
          bad.simple("SELECT bad"),
          bad.simple("SELECT behind"), // pipelined behind it on the same connection
        ]);
        for (const r of failed) {
          assert.equal(r.status, "rejected");
          const e = connectionError((r as PromiseRejectedResult).reason, "PROTOCOL_ERROR", text);
          assert.doesNotMatch(e.message, /garbage/);
        }
        assert.ok(bad.closed, "the connection that got the bad frame is closed");
        releaseSlow();
        assert.deepEqual(await slow, [{ v: "ok" }], "the other connection's query is answered");
        assert.ok(!good.closed);
        pool.release(good);
        pool.release(bad);
        assert.deepEqual(await pool.exec("SELECT after"), [{ v: "ok" }], "the pool still serves");
      } finally {
        releaseSlow();
        await pool.end();
        await fake.close();
      }
    });
  }
});

Deno.test("pg framing: a bad frame during authentication fails the connect with a clear error", () =>
  withFake(async (s) => {
    await s.send(header("R", -1));
  }, async (port) => {
    connectionError(await tryQuery(options(port)), "PROTOCOL_ERROR", /"R" message with length -1/);
  }));

Deno.test({
  name:
    "pg connect: a dial that completes after the connect timeout is closed, never authenticated",
  ignore: !PG_URL || Deno.build.os !== "linux",
  fn: async () => {
    const target = parseConnectionString(PG_URL);
    const proxy = await startLateProxy({ hostname: target.host, port: target.port });
    const marker = `late_dial_${crypto.randomUUID().slice(0, 8)}`;
    const opts = parseConnectionString(
      `postgres://${target.user}@127.0.0.1:${proxy.port}/${target.database}?application_name=${marker}`,
      noEnv,
    );
    opts.connectTimeoutMs = 500;
    const admin = new Pool(parseConnectionString(PG_URL), { max: 1 });
    const backends = async () =>
      Number(
        (await admin.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`,
          [marker],
        ))[0].n,
      );
    try {
      let settled = false;
      const opening = Connection.open(opts).finally(() => settled = true);
      opening.catch(() => {});
      // The dial is held: its SYN is dropped while the proxy's accept queue is full.
      let held = false;
      while (!settled && !(held = proxy.dialsPending() === 1)) {
        await new Promise((r) => setTimeout(r, 5));
      }
      const e = await opening.catch((x) => x);
      assert.ok(held, "the dial was in SYN-SENT before the timeout");
      connectionError(e, "CONNECT_TIMEOUT", /timed out after 500 ms/);
      // Now the proxy accepts: a dial still under way would complete at its next SYN.
      await proxy.release();
      while (proxy.dialsPending() > 0) await new Promise((r) => setTimeout(r, 20));
      assert.equal(proxy.dialsEstablished(), 0, "no connection to the proxy is left open");
      assert.equal(await backends(), 0, "no backend was authenticated for the late dial");
    } finally {
      await admin.end();
      await proxy.close();
    }
  },
});

Deno.test("pg connect: credentials about to travel in clear to another host are warned about, once", async () => {
  const fake = startFakePg(async (s) => {
    await s.startup();
    await s.send(s.auth(0));
    await s.ready();
    await s.serveQueries();
  });
  try {
    const warnings: string[] = [];
    // The machine's own name: not "localhost" nor a loopback address, for all the client knows.
    const host = Deno.hostname();
    const remote = parseConnectionString(`postgres://u:pw@${host}:${fake.port}/db`, noEnv);
    remote.warn = (m) => warnings.push(m);
    assert.deepEqual(await tryQuery(remote), [{ v: "ok" }]);
    assert.deepEqual(await tryQuery(remote), [{ v: "ok" }]);
    assert.equal(warnings.length, 1, "warned once per pool, not per connection");
    assert.match(
      warnings[0],
      new RegExp(`PostgreSQL at ${host}:${fake.port} is not encrypted \\(sslmode=prefer\\)`),
    );
    assert.doesNotMatch(warnings[0], /pw/);
    const local = options(fake.port, "sslmode=prefer");
    local.warn = (m) => warnings.push(m);
    assert.deepEqual(await tryQuery(local), [{ v: "ok" }]);
    assert.equal(warnings.length, 1, "not for 127.0.0.1");
  } finally {
    await fake.close();
  }
});

Deno.test("pg options: libpq's defaults and environment variables; the string wins over the environment", () => {
  const d = parseConnectionString("postgres://u@db.example.com/app", noEnv);
  assert.equal(d.ssl, "prefer");
  assert.equal(d.requireAuth, null);
  assert.equal(d.connectTimeoutMs, 5000);
  assert.equal(d.params.application_name, "authsvc");
  const vars: Record<string, string> = {
    PGHOST: "pg.internal",
    PGPORT: "6432",
    PGUSER: "app",
    PGPASSWORD: "secret",
    PGDATABASE: "appdb",
    PGSSLMODE: "verify-full",
    PGSSLROOTCERT: "/etc/ssl/ca.pem",
    PGCONNECT_TIMEOUT: "3",
    PGAPPNAME: "auth-eu",
    PGREQUIREAUTH: "scram-sha-256",
  };
  const env = parseConnectionString("postgres://", (n) => vars[n]);
  assert.equal(env.host, "pg.internal");
  assert.equal(env.port, 6432);
  assert.equal(env.user, "app");
  assert.equal(env.password, "secret");
  assert.equal(env.database, "appdb");
  assert.equal(env.ssl, "verify-full");
  assert.equal(env.sslRootCert, "/etc/ssl/ca.pem");
  assert.equal(env.connectTimeoutMs, 3000);
  assert.equal(env.params.application_name, "auth-eu");
  assert.deepEqual([...env.requireAuth!.methods], ["scram-sha-256"]);
  const over = parseConnectionString(
    "postgres://x:y@h:1/db?sslmode=disable&application_name=a&connect_timeout=9&require_auth=md5",
    (n) => vars[n],
  );
  assert.deepEqual(
    [over.host, over.port, over.user, over.password, over.database, over.ssl],
    ["h", 1, "x", "y", "db", "disable"],
  );
  assert.equal(over.params.application_name, "a");
  assert.equal(over.connectTimeoutMs, 9000);
  assert.deepEqual([...over.requireAuth!.methods], ["md5"]);
});

Deno.test("pg options: sslrootcert=system means verify-full; require_auth is checked like libpq's", () => {
  const sys = parseConnectionString("postgres://h/db?sslrootcert=system", noEnv);
  assert.equal(sys.ssl, "verify-full");
  assert.equal(sys.sslRootCert, "system");
  assert.throws(
    () => parseConnectionString("postgres://h/db?sslrootcert=system&sslmode=require", noEnv),
    /sslrootcert=system needs sslmode=verify-full \(sslmode is require\)/,
  );
  const neg = parseConnectionString("postgres://h/db?require_auth=!password,!md5", noEnv);
  assert.equal(neg.requireAuth!.negated, true);
  assert.deepEqual([...neg.requireAuth!.methods], ["password", "md5"]);
  for (
    const [value, text] of [
      ["scram-sha-256,!md5", /cannot be mixed/],
      ["md5,md5", /listed twice/],
      ["kerberos", /unknown method "kerberos"/],
    ]
  ) {
    assert.throws(
      () => parseConnectionString(`postgres://h/db?require_auth=${value}`, noEnv),
      text as RegExp,
    );
  }
  assert.throws(
    () => parseConnectionString("postgres://h/db?host=a,b", noEnv),
    /several hosts are not supported/,
  );
  assert.throws(
    () => parseConnectionString("postgres://h/db", (n) => n === "PGSSLMODE" ? "on" : undefined),
    /sslmode must be one of/,
  );
});

// The machine's own name, when it reaches the test PostgreSQL (it names this machine, but the
// client cannot know that: for it, another host).
const OWN_NAME_REACHES_PG = PG_URL
  ? await (async () => {
    const { port } = parseConnectionString(PG_URL);
    try {
      (await Deno.connect({ hostname: Deno.hostname(), port })).close();
      return Deno.hostname() !== "localhost";
    } catch {
      return false;
    }
  })()
  : false;

Deno.test({
  name:
    "server: a DATABASE_URL whose password would travel in clear to another host is logged as a warning",
  ignore: !OWN_NAME_REACHES_PG,
  fn: async () => {
    const target = parseConnectionString(PG_URL);
    const host = Deno.hostname();
    const ns = freshNamespace();
    const { config } = readConfig({
      ...BASE_ENV,
      AUTHSVC_DB_NAMESPACE: ns,
      DATABASE_URL:
        `postgres://${target.user}:not-asked-pw@${host}:${target.port}/${target.database}`,
    });
    const logs: string[] = [];
    const app = await createApp(config, { log: new Logger("info", (l) => logs.push(l)) });
    try {
      const res = await app.fetch(new Request("http://x/health"));
      await res.body?.cancel();
      assert.equal(res.status, 200);
      const warnings = logs.map((l) => JSON.parse(l)).filter((l) =>
        l.level === "warn" && /not encrypted/.test(l.msg)
      );
      assert.equal(warnings.length, 1, logs.join("\n"));
      assert.match(
        warnings[0].msg,
        new RegExp(`PostgreSQL at ${host}:${target.port} is not encrypted \\(sslmode=prefer\\)`),
      );
      assert.doesNotMatch(JSON.stringify(warnings[0]), /not-asked-pw/);
    } finally {
      const admin = new Pool(parseConnectionString(PG_URL), { max: 1 });
      await dropNamespaceObjects((text, params) => admin.query(text, params), ns).catch(() => {});
      await admin.end();
      await app.close();
    }
  },
});

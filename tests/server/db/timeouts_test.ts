/**
 * Timeouts on PostgreSQL (DATABASE_URL): a request whose statement waits on a
 * row lock held by another session answers 504 request_timeout in time (at
 * its deadline, AUTHSVC_API_MAX_REQUEST_DURATION, or when statement_timeout,
 * AUTHSVC_DB_STATEMENT_TIMEOUT, fires), other requests keep being answered
 * meanwhile, and the waiting backend is stopped (CancelRequest), also when
 * the client goes away. The lock is held by a connection of the test's own.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { Pool } from "../../../server/db/pg/pool.ts";
import type { Connection } from "../../../server/db/pg/connection.ts";
import { parseConnectionString } from "../../../server/db/pg/options.ts";
import { email, send } from "../ops/_fakes.ts";

const PG_URL = Deno.env.get("DATABASE_URL") ?? "";
const onPg = { ignore: !PG_URL };

/** Polls `probe` until it gives a value (a database state the test waits for), within a bound. */
async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const bound = performance.now() + 60_000;
  while (performance.now() < bound) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`gave up waiting for ${what}`);
}

interface Fixture {
  srv: TestServer;
  /** The test's own connections: the lock holder and the observer. */
  side: Pool;
  holder: Connection;
  accessToken: string;
  refreshToken: string;
  sessionId: string;
}

/** A server, a signed-in user, and the user's session row locked FOR UPDATE by another session. */
async function lockedSession(env: Record<string, string>): Promise<Fixture> {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true", ...env }, {
    backend: "postgres",
  });
  const up = await send(srv, "POST", "/signup", { email: email("lock"), password: "pw-123456" });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const accessToken = up.body.access_token as string;
  const claims = JSON.parse(atob(accessToken.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  const side = new Pool(parseConnectionString(PG_URL), { max: 3 });
  const holder = await side.reserve();
  await holder.simple("BEGIN");
  await holder.query(`SELECT id FROM ${srv.db.t("sessions")} WHERE id = $1 FOR UPDATE`, [
    claims.session_id,
  ]);
  return {
    srv,
    side,
    holder,
    accessToken,
    refreshToken: up.body.refresh_token as string,
    sessionId: claims.session_id,
  };
}

async function release(f: Fixture): Promise<void> {
  if (!f.holder.closed) await f.holder.simple("ROLLBACK").catch(() => {});
  f.side.release(f.holder);
  await f.side.end();
  await f.srv.close();
}

/** The PID of the backend waiting for the lock on this session's row. */
function waitingBackend(f: Fixture): Promise<number> {
  return until("a backend waiting for the session's row lock", async () => {
    const rows = await f.side.query(
      `SELECT a.pid FROM pg_stat_activity a
        WHERE a.wait_event_type = 'Lock' AND a.query LIKE '%FOR UPDATE%'
          AND a.query LIKE $1 AND a.pid <> pg_backend_pid()`,
      [`%${f.srv.db.t("sessions")}%`],
    );
    return rows.length ? rows[0].pid as number : undefined;
  });
}

/** Resolves once that backend no longer waits for a lock (cancelled, or gone). */
function stopsWaiting(f: Fixture, pid: number): Promise<true> {
  return until(`backend ${pid} to stop waiting`, async () => {
    const rows = await f.side.query(
      `SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`,
      [pid],
    );
    return rows.length === 0 || rows[0].wait_event_type !== "Lock" ? true : undefined;
  });
}

function refresh(f: Fixture, signal?: AbortSignal): Promise<Response> {
  return f.srv.fetch("/token?grant_type=refresh_token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ refresh_token: f.refreshToken }),
    signal,
  });
}

function assertTimeoutBody(status: number, body: Record<string, unknown>): void {
  assert.equal(status, 504, JSON.stringify(body));
  assert.equal(body.code, 504);
  assert.equal(body.error_code, "request_timeout");
  assert.match(String(body.msg), /timed out/);
}

Deno.test({
  name:
    "timeouts: a request stuck on a row lock answers 504 request_timeout at its deadline while others are served, and its backend is cancelled",
  ...onPg,
  fn: async () => {
    const f = await lockedSession({
      AUTHSVC_API_MAX_REQUEST_DURATION: "3s",
      AUTHSVC_DB_STATEMENT_TIMEOUT: "0",
    });
    try {
      let stuckAnswered = false;
      const stuck = refresh(f).then(async (res) => {
        stuckAnswered = true;
        return { status: res.status, body: await res.json() };
      });
      const pid = await waitingBackend(f);
      // Other requests are answered while the refresh waits, including reads of the locked row.
      for (let i = 0; i < 5; i++) {
        const me = await send(f.srv, "GET", "/user", undefined, {
          authorization: `Bearer ${f.accessToken}`,
        });
        assert.equal(me.status, 200);
        assert.equal((await send(f.srv, "GET", "/health")).status, 200);
      }
      assert.equal(stuckAnswered, false, "the other requests were answered first");
      const { status, body } = await stuck;
      assertTimeoutBody(status, body);
      // The lock is still held: the answer came from the deadline, and the backend was cancelled.
      assert.equal(f.holder.txStatus, "T");
      await stopsWaiting(f, pid);
      const [{ n }] = await f.side.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND query LIKE $1 AND pid <> pg_backend_pid()`,
        [`%${f.srv.db.t("sessions")}%`],
      );
      assert.equal(n, 0);
      // The given-up refresh changed nothing: once the lock is gone the token still works.
      await f.holder.simple("ROLLBACK");
      const again = await send(f.srv, "POST", "/token?grant_type=refresh_token", {
        refresh_token: f.refreshToken,
      });
      assert.equal(again.status, 200, JSON.stringify(again.body));
    } finally {
      await release(f);
    }
  },
});

Deno.test({
  name:
    "timeouts: PostgreSQL's statement_timeout (AUTHSVC_DB_STATEMENT_TIMEOUT) ends a lock wait with 504 request_timeout",
  ...onPg,
  fn: async (t) => {
    const f = await lockedSession({
      AUTHSVC_API_MAX_REQUEST_DURATION: "0",
      AUTHSVC_DB_STATEMENT_TIMEOUT: "300ms",
    });
    try {
      const [{ statement_timeout }] = await f.srv.db.query<{ statement_timeout: string }>(
        "SHOW statement_timeout",
      );
      if (statement_timeout !== "300ms") {
        // A transaction pooler that drops the startup parameter (PgBouncer's
        // ignore_startup_parameters): the setting cannot reach PostgreSQL (docs/database.md).
        await t.step({ name: "statement_timeout reaches PostgreSQL", ignore: true, fn: () => {} });
        return;
      }
      const res = await refresh(f);
      assertTimeoutBody(res.status, await res.json());
      assert.equal(f.holder.txStatus, "T", "the lock is still held");
    } finally {
      await release(f);
    }
  },
});

Deno.test({
  name: "timeouts: when the client goes away, its statement waiting on a lock is cancelled",
  ...onPg,
  fn: async () => {
    const f = await lockedSession({
      AUTHSVC_API_MAX_REQUEST_DURATION: "0",
      AUTHSVC_DB_STATEMENT_TIMEOUT: "0",
      LOG_LEVEL: "debug",
    });
    try {
      const ac = new AbortController();
      const gone = refresh(f, ac.signal).then(
        () => "answered",
        () => "aborted",
      );
      const pid = await waitingBackend(f);
      // The server looks at the request's connection once a statement has waited a while.
      await until("the server to watch the waiting request", () =>
        Promise.resolve(
          f.srv.logs.some((l) => l.includes("request waiting on the database")) || undefined,
        ));
      ac.abort();
      assert.equal(await gone, "aborted");
      await stopsWaiting(f, pid);
      assert.equal(f.holder.txStatus, "T", "the lock was still held: the cancel stopped the wait");
    } finally {
      await release(f);
    }
  },
});

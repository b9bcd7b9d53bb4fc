/**
 * A row lock held by a session of the test's own, for the timeout tests: a
 * server with the settings under test, a user signed up through a second
 * server on the same tables (default settings, so the short deadlines under
 * test bound only the test's own requests), and the user's session row
 * locked FOR UPDATE.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { Pool } from "../../../server/db/pg/pool.ts";
import type { Connection } from "../../../server/db/pg/connection.ts";
import { parseConnectionString } from "../../../server/db/pg/options.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

/** The database URL of the test run ("" without PostgreSQL). */
export const PG_URL = Deno.env.get("DATABASE_URL") ?? "";

/** Polls `probe` until it gives a value (a database state the test waits for), within a bound. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const bound = performance.now() + 60_000;
  while (performance.now() < bound) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`gave up waiting for ${what}`);
}

export interface Fixture {
  /** The server under test, with the timeouts of the test. */
  srv: TestServer;
  /** A server with the default settings on the same tables, that signed the user up. */
  setup: TestServer;
  /** The test's own connections: the lock holder and the observer. */
  side: Pool;
  holder: Connection;
  accessToken: string;
  refreshToken: string;
  sessionId: string;
}

/**
 * A server with `env`, a signed-in user, and the user's session row locked FOR UPDATE by another
 * session. The user signs up through a second server on the same tables with the default
 * settings, so that the short deadlines under test bound only the requests of the test.
 */
export async function lockedSession(env: Record<string, string>): Promise<Fixture> {
  const setup = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" }, {
    backend: "postgres",
  });
  const srv = await startTestServer({
    AUTHSVC_DB_NAMESPACE: setup.config.db.namespace.slice(0, -1),
    ...env,
  }, { backend: "postgres" });
  const up = await call(setup, "POST", "/signup", {
    body: {
      email: uniqueEmail("lock"),
      password: "pw-123456",
    },
  });
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
    setup,
    side,
    holder,
    accessToken,
    refreshToken: up.body.refresh_token as string,
    sessionId: claims.session_id,
  };
}

export async function release(f: Fixture): Promise<void> {
  if (!f.holder.closed) await f.holder.simple("ROLLBACK").catch(() => {});
  f.side.release(f.holder);
  await f.side.end();
  await f.srv.close();
  await f.setup.close();
}

/** The PID of the backend waiting for the lock on this session's row. */
export function waitingBackend(f: Fixture): Promise<number> {
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
export function stopsWaiting(f: Fixture, pid: number): Promise<true> {
  return until(`backend ${pid} to stop waiting`, async () => {
    const rows = await f.side.query(
      `SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`,
      [pid],
    );
    return rows.length === 0 || rows[0].wait_event_type !== "Lock" ? true : undefined;
  });
}

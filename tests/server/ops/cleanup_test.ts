/**
 * The cleanup of dead rows (server/auth/cleanup.ts, server/store/cleanup.ts):
 * each kind of row is deleted once dead and kept while alive, two cleaners at
 * once do not get in each other's way, and the scheduled pass runs and stops
 * with the server. Rows are aged in SQL against the server's clock (no
 * sleeping). Modelled on GoTrue's internal/models/cleanup_test.go.
 */
import assert from "node:assert/strict";
import {
  dropNamespace,
  freshNamespace,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from "../../helpers/server.ts";
import { refreshGrant, signUpSession } from "../core/_helpers.ts";
import { Cleanup } from "../../../server/auth/cleanup.ts";
import { openDb } from "../../../server/db/db.ts";
import { migrate } from "../../../server/db/migrate.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { Logger } from "../../../server/observe/log.ts";

const H = 3600;

/** A clock a test moves. */
function movableClock(start = Date.now()) {
  let t = start;
  return { now: () => new Date(t), advance: (sec: number) => t += sec * 1000 };
}

/** Runs SQL with `{table}` names written as the server's namespace has them. */
function sql(srv: { db: TestServer["db"] }, text: string, params: unknown[] = []) {
  return srv.db.query<Record<string, unknown>>(
    text.replace(/\{(\w+)\}/g, (_, n) => srv.db.t(n)),
    params,
  );
}

/** `sec` seconds before the server's now, as a Date. */
function ago(srv: TestServer, sec: number): Date {
  return new Date(srv.services.clock.now().getTime() - sec * 1000);
}

async function ids(srv: TestServer, table: string, col = "id"): Promise<string[]> {
  const rows = await sql(srv, `SELECT ${col}::text AS k FROM {${table}} ORDER BY 1`);
  return rows.map((r) => r.k as string);
}

Deno.test("cleanup deletes each kind of dead row and keeps the live ones", async () => {
  const clock = movableClock();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_AUDIT_LOG_RETENTION: "168h",
  }, { clock });
  try {
    const s = await signUpSession(srv);
    const userId = (s.user as { id: string }).id;
    const liveSession = (await sql(srv, `SELECT id FROM {sessions}`))[0].id as string;
    // Sessions: no end, an end ahead, ended within the grace window (24 h), ended before it.
    const session = async (tag: string, notAfter: Date | null) => {
      const [r] = await sql(
        srv,
        `INSERT INTO {sessions} (user_id, not_after, created_at, updated_at, user_agent)
         VALUES ($1, $2, $3, $3, $4) RETURNING id::text`,
        [userId, notAfter, ago(srv, 40 * 24 * H), tag],
      );
      return r.id as string;
    };
    const oldNoEnd = await session("no end", null);
    const endAhead = await session("end ahead", ago(srv, -H));
    const endedRecently = await session("ended 23h ago", ago(srv, 23 * H));
    const endedLongAgo = await session("ended 25h ago", ago(srv, 25 * H));
    // Refresh tokens: a live one untouched for long, revoked within the grace, revoked before it;
    // and one in the long-ended session (it goes with its session).
    const token = async (sessionId: string, revoked: boolean, updatedAgo: number) => {
      const [r] = await sql(
        srv,
        `INSERT INTO {refresh_tokens} (token_hash, user_id, session_id, revoked, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5) RETURNING id::text`,
        [crypto.randomUUID(), userId, sessionId, revoked, ago(srv, updatedAgo)],
      );
      return r.id as string;
    };
    const liveOld = await token(oldNoEnd, false, 30 * 24 * H);
    const revokedRecently = await token(oldNoEnd, true, 23 * H);
    const revokedLongAgo = await token(oldNoEnd, true, 25 * H);
    const inEndedSession = await token(endedLongAgo, false, H);
    // One-time tokens: expiring ahead, expired.
    for (const [tag, exp] of [["ahead", -60], ["expired", 1]] as const) {
      await sql(
        srv,
        `INSERT INTO {one_time_tokens} (user_id, token_type, token_hash, relates_to, expires_at)
         VALUES ($1, 'recovery_token', $2, $3, $4)`,
        [userId, crypto.randomUUID(), tag, ago(srv, exp)],
      );
    }
    // PKCE flows: 23 h and 25 h old (an unused flow lives a day: auth/pkce.ts).
    for (const [tag, age] of [["young", 23 * H], ["old", 25 * H]] as const) {
      await sql(
        srv,
        `INSERT INTO {flow_state} (code_challenge, code_challenge_method, authentication_method,
           provider_type, created_at, updated_at) VALUES ($1, 's256', 'magiclink', '', $2, $2)`,
        [tag, ago(srv, age)],
      );
    }
    // Used OAuth states: expiring ahead, expired.
    await sql(srv, `INSERT INTO {oauth_state_uses} (jti, expires_at) VALUES ('ahead', $1)`, [
      ago(srv, -60),
    ]);
    await sql(srv, `INSERT INTO {oauth_state_uses} (jti, expires_at) VALUES ('expired', $1)`, [
      ago(srv, 1),
    ]);
    // MFA challenges: 1 h and 25 h old.
    const [factor] = await sql(
      srv,
      `INSERT INTO {mfa_factors} (user_id, factor_type, secret) VALUES ($1, 'totp', 'x')
       RETURNING id`,
      [userId],
    );
    for (const [tag, age] of [["young", H], ["old", 25 * H]] as const) {
      await sql(
        srv,
        `INSERT INTO {mfa_challenges} (factor_id, ip_address, created_at) VALUES ($1, $2, $3)`,
        [factor.id, tag, ago(srv, age)],
      );
    }
    await sql(srv, `DELETE FROM {send_log}`);
    await sql(srv, `DELETE FROM {rate_counters}`);
    // Send log: the longest look-back of the default limits is an hour (RATE_LIMIT_EMAIL_SENT).
    for (const [tag, age] of [["young", 59 * 60], ["old", 61 * 60]] as const) {
      await sql(
        srv,
        `INSERT INTO {send_log} (channel, recipient, kind, sent_at) VALUES ('email', $1, 'x', $2)`,
        [tag, ago(srv, age)],
      );
    }
    // Shared rate counters: kept for twice the longest window (1 h).
    for (const [tag, age] of [["young", H], ["old", 3 * H]] as const) {
      await sql(srv, `INSERT INTO {rate_counters} (key, window_start, count) VALUES ($1, $2, 1)`, [
        tag,
        ago(srv, age),
      ]);
    }
    // Audit entries: within and past the retention (168 h).
    await sql(srv, `DELETE FROM {audit_log_entries}`);
    for (const [tag, age] of [["young", 167 * H], ["old", 169 * H]] as const) {
      await sql(srv, `INSERT INTO {audit_log_entries} (ip_address, created_at) VALUES ($1, $2)`, [
        tag,
        ago(srv, age),
      ]);
    }
    // The console's activity counts: kept a day.
    for (const [tag, age] of [["young", 23 * H], ["old", 25 * H]] as const) {
      await sql(srv, `INSERT INTO {activity_minutes} (minute, series, count) VALUES ($1, $2, 1)`, [
        ago(srv, age),
        tag,
      ]);
    }

    const counts = await srv.services.cleanup.runOnce();

    assert.deepEqual(
      new Set(await ids(srv, "sessions")),
      new Set([liveSession, oldNoEnd, endAhead, endedRecently]),
    );
    const tokens = new Set(await ids(srv, "refresh_tokens"));
    assert.ok(tokens.has(liveOld) && tokens.has(revokedRecently), "live and recent tokens stay");
    assert.ok(!tokens.has(revokedLongAgo), "a token revoked a day ago is deleted");
    assert.ok(!tokens.has(inEndedSession), "tokens of a deleted session go with it");
    assert.deepEqual(await ids(srv, "one_time_tokens", "relates_to"), ["ahead"]);
    assert.deepEqual(await ids(srv, "flow_state", "code_challenge"), ["young"]);
    assert.deepEqual(await ids(srv, "oauth_state_uses", "jti"), ["ahead"]);
    assert.deepEqual(await ids(srv, "mfa_challenges", "ip_address"), ["young"]);
    assert.deepEqual(await ids(srv, "send_log", "recipient"), ["young"]);
    assert.deepEqual(await ids(srv, "rate_counters", "key"), ["young"]);
    assert.deepEqual(await ids(srv, "audit_log_entries", "ip_address"), ["young"]);
    assert.deepEqual(await ids(srv, "activity_minutes", "series"), ["young"]);
    assert.equal(counts.refresh_tokens, 1);
    assert.equal(counts.sessions_expired, 1);
    assert.equal(counts.audit_log, 1);

    // The signed-up session was not touched: its token still refreshes.
    const r = await refreshGrant(srv, s.refresh_token);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // A second pass finds nothing more.
    const again = await srv.services.cleanup.runOnce();
    assert.equal(Object.values(again).reduce((a, b) => a + b, 0), 0);
  } finally {
    await srv.close();
  }
});

Deno.test("without AUDIT_LOG_RETENTION audit entries are kept however old", async () => {
  const srv = await startTestServer({});
  try {
    await sql(srv, `INSERT INTO {audit_log_entries} (ip_address, created_at) VALUES ('x', $1)`, [
      ago(srv, 10 * 365 * 24 * H),
    ]);
    const counts = await srv.services.cleanup.runOnce();
    assert.equal(counts.audit_log, 0);
    assert.deepEqual(await ids(srv, "audit_log_entries", "ip_address"), ["x"]);
  } finally {
    await srv.close();
  }
});

Deno.test("sessions past SESSIONS_TIMEBOX or idle past SESSIONS_INACTIVITY_TIMEOUT end, then go", async () => {
  const clock = movableClock();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SESSIONS_TIMEBOX: "10h",
    AUTHSVC_SESSIONS_INACTIVITY_TIMEOUT: "2h",
  }, { clock });
  try {
    // Refreshed every hour: the inactivity timeout does not end it, the timebox does.
    const boxed = await signUpSession(srv);
    // Left alone: the inactivity timeout ends it.
    const idle = await signUpSession(srv);
    let token = boxed.refresh_token;
    for (let h = 1; h <= 9; h++) {
      clock.advance(H);
      const r = await refreshGrant(srv, token);
      assert.equal(r.status, 200, `hour ${h}: ${JSON.stringify(r.body)}`);
      token = r.body.refresh_token as string;
    }
    const idleAnswer = await refreshGrant(srv, idle.refresh_token);
    assert.equal(idleAnswer.status, 400);
    assert.equal(idleAnswer.body.error_code, "session_expired");
    clock.advance(H + 1);
    const boxedAnswer = await refreshGrant(srv, token);
    assert.equal(boxedAnswer.status, 400);
    assert.equal(boxedAnswer.body.error_code, "session_expired");

    // Within the grace window (a day) the ended sessions stay, so clients hear why.
    await srv.services.cleanup.runOnce();
    assert.equal((await ids(srv, "sessions")).length, 2);
    clock.advance(24 * H);
    const counts = await srv.services.cleanup.runOnce();
    assert.equal(counts.sessions_timebox + counts.sessions_inactive, 2);
    assert.deepEqual(await ids(srv, "sessions"), []);
    assert.deepEqual(await ids(srv, "refresh_tokens"), []);
    const gone = await refreshGrant(srv, token);
    assert.equal(gone.body.error_code, "refresh_token_not_found");
  } finally {
    await srv.close();
  }
});

Deno.test("two cleaners at once delete every dead row once and nothing else", async () => {
  // Two pools on one PostgreSQL database, as two server processes have; on PGlite (one
  // connection) the two passes take turns.
  const url = testDatabaseUrl();
  const ns = freshNamespace();
  const { config } = readConfig({
    AUTHSVC_SITE_URL: "http://localhost:3000",
    AUTHSVC_API_EXTERNAL_URL: "http://localhost:8081",
    AUTHSVC_JWT_SECRET: "test-secret-that-is-long-enough-for-hs256-0123456789",
    AUTHSVC_DB_NAMESPACE: ns,
    AUTHSVC_CLEANUP_BATCH_SIZE: "50",
  });
  const open = () =>
    openDb({ url, dataDir: url ? "" : "memory://", maxPoolSize: 3, prefix: `${ns}_` });
  const a = await open();
  const b = url ? await open() : a;
  const db = { db: a };
  try {
    await migrate(a);
    const now = new Date();
    const [u] = await sql(db, `INSERT INTO {users} (email) VALUES ('x@example.com') RETURNING id`);
    // 400 sessions with 10 tokens each: 5 revoked two days ago, 4 revoked just now, 1 live.
    await sql(
      db,
      `INSERT INTO {sessions} (user_id) SELECT $1 FROM generate_series(1, 400)`,
      [u.id],
    );
    await sql(
      db,
      `INSERT INTO {refresh_tokens} (token_hash, user_id, session_id, revoked, updated_at)
       SELECT md5(s.id::text || g), $1, s.id, g < 10, $2::timestamptz - (g < 6)::int * interval '2 days'
       FROM {sessions} s, generate_series(1, 10) g`,
      [u.id, now],
    );
    await sql(
      db,
      `INSERT INTO {send_log} (channel, recipient, kind, sent_at)
       SELECT 'email', 'r' || g, 'x', $1::timestamptz - (g % 2) * interval '2 days'
       FROM generate_series(1, 3000) g`,
      [now],
    );
    const log = new Logger("error");
    const clock = { now: () => now };
    const one = new Cleanup(a, config, clock, log);
    const two = new Cleanup(b, config, clock, log);
    const [c1, c2] = await Promise.all([one.runOnce(), two.runOnce()]);
    assert.equal(c1.refresh_tokens + c2.refresh_tokens, 400 * 5);
    assert.equal(c1.send_log + c2.send_log, 1500);
    const [left] = await sql(
      db,
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE revoked)::int AS revoked,
         min(updated_at) AS oldest FROM {refresh_tokens}`,
    );
    assert.equal(left.n, 400 * 5);
    assert.equal(left.revoked, 400 * 4);
    assert.equal((left.oldest as Date).getTime(), now.getTime());
    const [sent] = await sql(db, `SELECT count(*)::int AS n FROM {send_log}`);
    assert.equal(sent.n, 1500);
  } finally {
    if (url) {
      await dropNamespace(a, `${ns}_`).catch(() => {});
      await b.close();
    }
    await a.close();
  }
});

Deno.test("the server runs the cleanup every CLEANUP_INTERVAL and stops it at close", async () => {
  const srv = await startTestServer({ AUTHSVC_CLEANUP_INTERVAL: "1s" });
  let closed = false;
  try {
    // Waits for the pass that deleted the row (one may have run before it was inserted).
    const passed = new Promise<unknown>((resolve) => {
      srv.services.cleanup.onPass = (counts, error) => {
        if (error || counts!.oauth_states > 0) resolve(error ?? counts);
      };
    });
    await sql(srv, `INSERT INTO {oauth_state_uses} (jti, expires_at) VALUES ('expired', $1)`, [
      ago(srv, 1),
    ]);
    assert.equal(((await passed) as { oauth_states: number }).oauth_states, 1);
    assert.deepEqual(await ids(srv, "oauth_state_uses", "jti"), []);
    await srv.close();
    closed = true;
    // Stopped: no timer is left behind (the test sanitizer would fail the test otherwise).
  } finally {
    if (!closed) await srv.close();
  }
});

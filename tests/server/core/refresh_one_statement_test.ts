/**
 * The refresh grant's one-statement path (RefreshTokenStore.rotateLive)
 * rotates exactly when the refresh policy (auth/refresh_policy.ts) says
 * `rotate` and the session limits (auth/session_limits.ts) find the session
 * valid, and changes nothing otherwise: every state they tell apart is set
 * up in the database and both are asked.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { signUpSession } from "./_helpers.ts";
import { RefreshTokenStore } from "../../../server/store/refresh_tokens.ts";
import { decideRefresh } from "../../../server/auth/refresh_policy.ts";
import { sessionValidity } from "../../../server/auth/session_limits.ts";

const H = 3600_000;

interface Case {
  name: string;
  user?: { banned_until?: Date | null; deleted_at?: Date | null };
  session?: { not_after?: Date | null; created_at?: Date; refreshed_at?: Date | null };
  revoked?: boolean;
  /** The revoked token's child is the session's live token (its answer was lost). */
  liveChild?: boolean;
  unknown?: boolean;
  /** When the presented token was written (default: at sign-up). */
  tokenAt?: Date;
}

async function setUp(srv: TestServer, c: Case, now: Date) {
  const s = await signUpSession(srv);
  const userId = (s.user as { id: string }).id;
  const t = (n: string) => srv.db.t(n);
  const [tok] = await srv.db.query<
    { id: number; token_hash: string; session_id: string; updated_at: Date }
  >(
    `SELECT id, token_hash, session_id, updated_at FROM ${t("refresh_tokens")} WHERE user_id = $1`,
    [userId],
  );
  const u = { banned_until: null, deleted_at: null, ...c.user };
  await srv.db.query(
    `UPDATE ${t("users")} SET banned_until = $2, deleted_at = $3 WHERE id = $1`,
    [userId, u.banned_until, u.deleted_at],
  );
  const ses = { not_after: null, created_at: now, refreshed_at: null, ...c.session };
  await srv.db.query(
    `UPDATE ${t("sessions")} SET not_after = $2, created_at = $3, refreshed_at = $4 WHERE id = $1`,
    [tok.session_id, ses.not_after, ses.created_at, ses.refreshed_at],
  );
  if (c.tokenAt) {
    await srv.db.query(`UPDATE ${t("refresh_tokens")} SET updated_at = $2 WHERE id = $1`, [
      tok.id,
      c.tokenAt,
    ]);
    tok.updated_at = c.tokenAt;
  }
  if (c.revoked) {
    await srv.db.query(`UPDATE ${t("refresh_tokens")} SET revoked = true WHERE id = $1`, [tok.id]);
  }
  if (c.liveChild) {
    await srv.db.query(
      `INSERT INTO ${t("refresh_tokens")} (token_hash, user_id, session_id, parent_id)
       VALUES ($1, $2, $3, $4)`,
      [`live-${crypto.randomUUID()}`, userId, tok.session_id, tok.id],
    );
  }
  return { userId, tok, u, ses };
}

Deno.test("one-statement rotation agrees with the refresh policy in every state", async () => {
  const now = new Date(Date.now() + 1000);
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  const store = new RefreshTokenStore(srv.db);
  const settings = { rotationEnabled: true, reuseIntervalSec: 10 };
  const limits = { timeboxSec: 10 * 3600, inactivityTimeoutSec: 3600, singlePerUser: false };
  const ago = (ms: number) => new Date(now.getTime() - ms);
  const cases: Case[] = [
    { name: "live" },
    { name: "unknown token", unknown: true },
    { name: "revoked token", revoked: true },
    { name: "revoked token, its child live", revoked: true, liveChild: true },
    {
      name: "revoked long ago, its child live",
      revoked: true,
      liveChild: true,
      tokenAt: ago(5 * H),
      session: { created_at: ago(6 * H), refreshed_at: ago(1) },
    },
    { name: "banned", user: { banned_until: ago(-H) } },
    { name: "ban ends now", user: { banned_until: now } },
    { name: "ban ended", user: { banned_until: ago(H) } },
    { name: "deleted user", user: { deleted_at: ago(H) } },
    { name: "not_after now", session: { not_after: now } },
    { name: "not_after ahead", session: { not_after: ago(-1) } },
    { name: "timebox passed", session: { created_at: ago(10 * H + 1), refreshed_at: ago(1) } },
    { name: "timebox ends now", session: { created_at: ago(10 * H), refreshed_at: ago(1) } },
    { name: "idle too long", session: { created_at: ago(2 * H), refreshed_at: ago(H + 1) } },
    { name: "idle just long enough", session: { created_at: ago(2 * H), refreshed_at: ago(H) } },
    // Never refreshed: active when its token was last written (GoTrue's LastRefreshedAt).
    { name: "never refreshed, token new", session: { created_at: ago(H + 1), refreshed_at: null } },
    {
      name: "never refreshed, token old",
      session: { created_at: ago(2 * H), refreshed_at: null },
      tokenAt: ago(H + 1),
    },
  ];
  try {
    for (const c of cases) {
      const { userId, tok, u, ses } = await setUp(srv, c, now);
      const decision = decideRefresh({
        token: c.unknown ? null : { revoked: !!c.revoked, updated_at: tok.updated_at },
        session: ses,
        user: u.deleted_at ? null : { banned_until: u.banned_until },
        current: c.liveChild ? { generation: 1, issued_at: tok.updated_at } : null,
        now,
      }, settings);
      const valid = sessionValidity(limits, { id: tok.session_id, ...ses }, now, tok.updated_at);
      const expected = decision === "rotate" && valid === "valid"
        ? "rotate"
        : `${decision}/${valid}`;
      const childHash = `child-${crypto.randomUUID()}`;
      const done = await store.rotateLive({
        hash: c.unknown ? "no-such-hash" : tok.token_hash,
        childHash,
        now,
        timeboxSec: limits.timeboxSec,
        inactivityTimeoutSec: limits.inactivityTimeoutSec,
        auditPayload: { action: "token_refreshed" },
        ip: "",
      });
      assert.equal(done !== null, expected === "rotate", `${c.name}: policy says ${expected}`);
      const rows = await srv.db.query<{ revoked: boolean; token_hash: string }>(
        `SELECT revoked, token_hash FROM ${srv.db.t("refresh_tokens")} WHERE user_id = $1
         ORDER BY id`,
        [userId],
      );
      if (done) {
        assert.deepEqual(rows.map((r) => r.revoked), [true, false], c.name);
        assert.equal(rows[1].token_hash, childHash);
        assert.equal(done.user.id, userId);
        assert.equal(done.session.id, tok.session_id);
        assert.ok(done.session.created_at instanceof Date);
        assert.equal(done.identities.length, 1);
        assert.ok(done.identities[0].created_at instanceof Date);
      } else {
        const before = c.liveChild ? [true, false] : [!!c.revoked];
        assert.deepEqual(rows.map((r) => r.revoked), before, `${c.name}: nothing changed`);
      }
    }
  } finally {
    await srv.close();
  }
});

Deno.test("of concurrent one-statement exchanges of one token exactly one rotates", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  const store = new RefreshTokenStore(srv.db);
  try {
    const s = await signUpSession(srv);
    const [tok] = await srv.db.query<{ token_hash: string }>(
      `SELECT token_hash FROM ${srv.db.t("refresh_tokens")} WHERE user_id = $1`,
      [(s.user as { id: string }).id],
    );
    const tries = await Promise.all(Array.from({ length: 8 }, (_, i) =>
      store.rotateLive({
        hash: tok.token_hash,
        childHash: `child-${i}`,
        now: new Date(),
        timeboxSec: 0,
        inactivityTimeoutSec: 0,
        auditPayload: { action: "token_refreshed" },
        ip: "",
      })));
    assert.equal(tries.filter((d) => d !== null).length, 1);
    const [n] = await srv.db.query<{ n: number; live: number; audits: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE NOT revoked)::int AS live,
         (SELECT count(*)::int FROM ${srv.db.t("audit_log_entries")}
          WHERE payload->>'action' = 'token_refreshed') AS audits
       FROM ${srv.db.t("refresh_tokens")}`,
    );
    assert.deepEqual(n, { n: 2, live: 1, audits: 1 });
  } finally {
    await srv.close();
  }
});

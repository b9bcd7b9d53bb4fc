/**
 * Refresh-token reuse as GoTrue answers it (issue 38 item 10): what a browser does with an
 * already-used refresh token, sent over HTTP in the order the server receives it, with the
 * server's clock moved by the test (no sleeps). Two ordinary browser sequences keep the user
 * signed in; a stolen old token replayed after the reuse interval still ends the session.
 *
 * The rule (auth/refresh_policy.ts, docs/sessions.md "Refresh-token reuse"): a used token gets
 * the live token when the live token was issued at most AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL
 * after the used token's own use (its parent at any age, any token within the interval of its
 * use, a token superseded in one burst of exchanges); any other reuse revokes the family.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { call } from "../../helpers/http.ts";
import { refreshGrant, signUpSession } from "../core/_helpers.ts";

/** The server's clock: stands still until the test moves it. */
function testClock() {
  let at = Date.now();
  return { now: () => new Date(at), advance: (sec: number) => void (at += sec * 1000) };
}

async function server(clock: ReturnType<typeof testClock>): Promise<TestServer> {
  return await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "10s",
  }, { clock });
}

/** The session still works: its access token passes GET /user and its refresh token rotates. */
async function assertSignedIn(srv: TestServer, set: Record<string, unknown>): Promise<void> {
  const me = await call(srv, "GET", "/user", { token: String(set.access_token) });
  assert.equal(me.status, 200, JSON.stringify(me.body));
  const next = await refreshGrant(srv, String(set.refresh_token));
  assert.equal(next.status, 200, JSON.stringify(next.body));
}

Deno.test("two tabs: one refreshes twice while the other's single refresh is on a slow link, both stay signed in", async () => {
  const clock = testClock();
  const srv = await server(clock);
  try {
    const s = await signUpSession(srv);
    // Both tabs read T0 from the shared storage. Tab B sends its refresh first, over a slow
    // link; tab A's two refreshes reach the server before it.
    const a1 = await refreshGrant(srv, s.refresh_token);
    assert.equal(a1.status, 200, JSON.stringify(a1.body));
    clock.advance(1.5);
    const a2 = await refreshGrant(srv, a1.body.refresh_token as string);
    assert.equal(a2.status, 200, JSON.stringify(a2.body));
    clock.advance(1.5);
    // Tab B's T0 arrives 3 s after tab A used it: two generations behind, within the interval.
    const b = await refreshGrant(srv, s.refresh_token);
    assert.equal(b.status, 200, JSON.stringify(b.body));
    assert.equal(b.body.refresh_token, a2.body.refresh_token, "tab B gets the live token");
    // Whichever tab's answer the storage keeps, the session goes on.
    await assertSignedIn(srv, b.body);
  } finally {
    await srv.close();
  }
});

Deno.test("a lost refresh answer retried by supabase-js after 12.7 s gets the token it never saw", async () => {
  const clock = testClock();
  const srv = await server(clock);
  try {
    const s = await signUpSession(srv);
    // The server rotates T0 into T1, and the answer is lost on the way back (the browser sees a
    // network error). auth-js retries with back-off (200 ms, 400 ms, ... 6.4 s): its seventh
    // attempt leaves 12.6 s after the first and arrives at 12.7 s.
    const lost = await refreshGrant(srv, s.refresh_token);
    assert.equal(lost.status, 200, JSON.stringify(lost.body));
    clock.advance(12.7);
    const retry = await refreshGrant(srv, s.refresh_token);
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal(
      retry.body.refresh_token,
      lost.body.refresh_token,
      "the live token, not a new one",
    );
    await assertSignedIn(srv, retry.body);
    // Any age: a laptop that lost the answer and wakes up a day later is still signed in.
    const again = await refreshGrant(srv, retry.body.refresh_token as string);
    assert.equal(again.status, 200);
    clock.advance(86_400);
    const late = await refreshGrant(srv, retry.body.refresh_token as string);
    assert.equal(late.status, 200, JSON.stringify(late.body));
    assert.equal(late.body.refresh_token, again.body.refresh_token);
  } finally {
    await srv.close();
  }
});

Deno.test("a stolen old token replayed after the reuse interval still revokes the family", async () => {
  const clock = testClock();
  const srv = await server(clock);
  try {
    const s = await signUpSession(srv);
    const t1 = await refreshGrant(srv, s.refresh_token);
    clock.advance(60);
    const t2 = await refreshGrant(srv, t1.body.refresh_token as string);
    assert.equal(t2.status, 200);
    // The thief replays T0, used 60 s ago and two generations behind the live token.
    clock.advance(1);
    const replay = await refreshGrant(srv, s.refresh_token);
    assert.equal(replay.status, 400, JSON.stringify(replay.body));
    assert.equal(replay.body.error_code, "refresh_token_already_used");
    // The whole family is gone: the owner's live token and access token with it.
    const owner = await refreshGrant(srv, t2.body.refresh_token as string);
    assert.equal(owner.status, 400);
    const me = await call(srv, "GET", "/user", { token: String(t2.body.access_token) });
    assert.equal(me.status, 403);
    assert.equal(me.body.error_code, "session_not_found");
    const [revoked] = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("audit_log_entries")}
       WHERE payload->>'action' = 'token_revoked'
         AND payload->'traits'->>'reason' = 'refresh_token_reused'`,
    );
    assert.equal(revoked.n, 1, "the revocation is in the audit log");
  } finally {
    await srv.close();
  }
});

Deno.test("an app server's answer writes an older cookie over the tab's newer token: the next refresh, an hour later, keeps the session", async () => {
  const clock = testClock();
  const srv = await server(clock);
  try {
    const s = await signUpSession(srv);
    // A page load: the app server refreshes T0 from the cookie and renders for 2 s.
    const ssr = await refreshGrant(srv, s.refresh_token);
    assert.equal(ssr.status, 200);
    // Meanwhile a tab, holding T1 from the shared cookie, refreshes twice (the app wanted
    // fresh claims) and stores T3.
    clock.advance(0.5);
    const t2 = await refreshGrant(srv, ssr.body.refresh_token as string);
    clock.advance(1);
    const t3 = await refreshGrant(srv, t2.body.refresh_token as string);
    assert.equal(t3.status, 200);
    // The server's answer arrives at 2 s with Set-Cookie: T1 over T3. An hour later the
    // browser refreshes with T1, two exchanges behind and used an hour ago.
    clock.advance(3600);
    const next = await refreshGrant(srv, ssr.body.refresh_token as string);
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.equal(next.body.refresh_token, t3.body.refresh_token, "the live token");
    await assertSignedIn(srv, next.body);
  } finally {
    await srv.close();
  }
});

Deno.test("an older token gets the live token only when every exchange after its use came within the interval", async () => {
  const clock = testClock();
  const srv = await server(clock);
  try {
    for (const [gap, kept] of [[10, true], [10.5, false]] as const) {
      const s = await signUpSession(srv);
      const t1 = await refreshGrant(srv, s.refresh_token);
      clock.advance(gap);
      const t2 = await refreshGrant(srv, t1.body.refresh_token as string);
      assert.equal(t2.status, 200);
      clock.advance(kept ? 3600 : 0.1);
      const old = await refreshGrant(srv, s.refresh_token);
      assert.equal(old.status, kept ? 200 : 400, `T0 with T2 issued ${gap} s after T0's use`);
      const live = await refreshGrant(srv, t2.body.refresh_token as string);
      assert.equal(live.status, kept ? 200 : 400, `the live token after T0 (${gap} s)`);
    }
  } finally {
    await srv.close();
  }
});

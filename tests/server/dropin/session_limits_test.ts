/**
 * Session limits (GoTrue's SESSIONS_TIMEBOX, SESSIONS_INACTIVITY_TIMEOUT,
 * SESSIONS_SINGLE_PER_USER), through POST /token?grant_type=refresh_token.
 * Cases follow GoTrue's internal/api/token_test.go (TestRefreshTokenGrant*
 * with timebox, inactivity timeout and single session per user).
 */
import assert from "node:assert/strict";
import { ConfigError, readConfig } from "../../../server/config/mod.ts";
import { BASE_ENV, startTestServer } from "../../helpers/server.ts";
import { bearer, call, email, passwordGrant, refreshGrant, signUpSession } from "./_helpers.ts";

/** A clock a test moves forward by hand. */
function movableClock() {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance: (sec: number) => offset += sec * 1000,
  };
}

Deno.test("SESSIONS_TIMEBOX: a session cannot be refreshed past its time box", async () => {
  const clock = movableClock();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SESSIONS_TIMEBOX: "1h",
  }, { clock });
  try {
    const s = await signUpSession(srv);
    clock.advance(30 * 60);
    const ok = await refreshGrant(srv, s.refresh_token);
    assert.equal(ok.status, 200);
    clock.advance(31 * 60); // 61 minutes after sign-in, though refreshed 31 minutes ago
    const late = await refreshGrant(srv, ok.body.refresh_token as string);
    assert.equal(late.status, 400);
    assert.equal(late.body.error_code, "session_expired");
    assert.equal(late.body.msg, "Invalid Refresh Token: Session Expired");
  } finally {
    await srv.close();
  }
});

Deno.test("SESSIONS_INACTIVITY_TIMEOUT: an idle session expires, an active one lives on", async () => {
  const clock = movableClock();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SESSIONS_INACTIVITY_TIMEOUT: "10m",
  }, { clock });
  try {
    const s = await signUpSession(srv);
    let token = s.refresh_token;
    for (let i = 0; i < 3; i++) { // 27 minutes of activity, never 10 idle
      clock.advance(9 * 60);
      const r = await refreshGrant(srv, token);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      token = r.body.refresh_token as string;
    }
    clock.advance(11 * 60);
    const idle = await refreshGrant(srv, token);
    assert.equal(idle.status, 400);
    assert.equal(idle.body.error_code, "session_expired");
    assert.equal(idle.body.msg, "Invalid Refresh Token: Session Expired (Inactivity)");
  } finally {
    await srv.close();
  }
});

Deno.test("SESSIONS_SINGLE_PER_USER: a newer sign-in ends the older session", async () => {
  const clock = movableClock();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SESSIONS_SINGLE_PER_USER: "true",
  }, { clock });
  try {
    const address = email();
    const first = await signUpSession(srv, address, "secret-pw-1");
    clock.advance(5);
    const second = await passwordGrant(srv, { email: address, password: "secret-pw-1" });
    assert.equal(second.status, 200);
    clock.advance(5);
    const old = await refreshGrant(srv, first.refresh_token);
    assert.equal(old.status, 400);
    assert.equal(old.body.error_code, "session_expired");
    assert.equal(old.body.msg, "Invalid Refresh Token: Session Expired (Revoked by Newer Login)");
    const current = await refreshGrant(srv, second.body.refresh_token as string);
    assert.equal(current.status, 200);
    // the newest session keeps refreshing
    clock.advance(5);
    const again = await refreshGrant(srv, current.body.refresh_token as string);
    assert.equal(again.status, 200);
  } finally {
    await srv.close();
  }
});

Deno.test("without SESSIONS_SINGLE_PER_USER both sessions keep refreshing", async () => {
  const clock = movableClock();
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" }, { clock });
  try {
    const address = email();
    const first = await signUpSession(srv, address, "secret-pw-1");
    clock.advance(5);
    const second = await passwordGrant(srv, { email: address, password: "secret-pw-1" });
    clock.advance(24 * 3600);
    assert.equal((await refreshGrant(srv, first.refresh_token)).status, 200);
    assert.equal((await refreshGrant(srv, second.body.refresh_token as string)).status, 200);
  } finally {
    await srv.close();
  }
});

Deno.test("a malformed session limit stops the start naming the variable", () => {
  assert.throws(
    () => readConfig({ ...BASE_ENV, AUTHSVC_SESSIONS_TIMEBOX: "one day" }),
    (e) => e instanceof ConfigError && /AUTHSVC_SESSIONS_TIMEBOX/.test(e.message),
  );
  const { config } = readConfig({ ...BASE_ENV, AUTHSVC_SESSIONS_INACTIVITY_TIMEOUT: "1h30m" });
  assert.equal(config.sessions.inactivityTimeoutSec, 5400);
});

// GoTrue's requireAdminCredentials (internal/api/middleware.go, and its
// middleware_test.go "admin token past session timebox is rejected"): an admin
// token bound to a session opens nothing once the session is past a limit.
Deno.test("an admin token of a session past its time box: 403 session_expired", async () => {
  const clock = movableClock();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SESSIONS_TIMEBOX: "1h",
    AUTHSVC_JWT_EXP: "86400",
  }, { clock });
  try {
    const address = email();
    const s = await signUpSession(srv, address, "secret-pw-1");
    const id = (s.user as Record<string, unknown>).id as string;
    const service = bearer(await srv.serviceRoleToken());
    const promoted = await call(
      srv,
      "PUT",
      `/admin/users/${id}`,
      { role: "supabase_admin" },
      service,
    );
    assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
    const signIn = await passwordGrant(srv, { email: address, password: "secret-pw-1" });
    const admin = bearer(signIn.body.access_token as string);
    assert.equal((await call(srv, "GET", "/admin/users", undefined, admin)).status, 200);
    clock.advance(61 * 60); // the access token lives a day, the session's time box is an hour
    const late = await call(srv, "GET", "/admin/users", undefined, admin);
    assert.equal(late.status, 403);
    assert.equal(late.body.error_code, "session_expired");
    assert.equal(late.body.msg, "Session is no longer valid");
    // a sessionless service_role token is not affected
    assert.equal((await call(srv, "GET", "/admin/users", undefined, service)).status, 200);
  } finally {
    await srv.close();
  }
});

Deno.test("an admin token whose session was signed out: 403 session_not_found", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const address = email();
    const s = await signUpSession(srv, address, "secret-pw-1");
    const id = (s.user as Record<string, unknown>).id as string;
    const service = bearer(await srv.serviceRoleToken());
    await call(srv, "PUT", `/admin/users/${id}`, { role: "supabase_admin" }, service);
    const signIn = await passwordGrant(srv, { email: address, password: "secret-pw-1" });
    const admin = bearer(signIn.body.access_token as string);
    assert.equal((await call(srv, "POST", "/logout", undefined, admin)).status, 204);
    const after = await call(srv, "GET", "/admin/users", undefined, admin);
    assert.equal(after.status, 403);
    assert.equal(after.body.error_code, "session_not_found");
  } finally {
    await srv.close();
  }
});

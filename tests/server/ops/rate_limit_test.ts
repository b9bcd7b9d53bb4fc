import assert from "node:assert/strict";
import { BASE_ENV, startTestServer } from "../../helpers/server.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { LOCAL_KEYS_MAX } from "../../../server/security/rate_limit.ts";
import { TestClock } from "./_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

/**
 * A clock that stands at the present: windows are aligned to the epoch, so a
 * test whose requests straddled a window's end (the hour, for "2/1h") would
 * see its count reset half-way.
 */
const stillNow = () => new TestClock(Date.now());

Deno.test("rate limit: /verify answers 429 with Retry-After past RATE_LIMIT_VERIFY, per client", async () => {
  const clock = new TestClock();
  const srv = await startTestServer({
    AUTHSVC_RATE_LIMIT_VERIFY: "3/5m",
    AUTHSVC_SECURITY_SB_FORWARDED_FOR_ENABLED: "true",
  }, { clock });
  try {
    const from = (ip: string) => ({ "authsvc-proxy-forwarded-for": ip });
    for (let i = 0; i < 3; i++) {
      const r = await call(srv, "POST", "/verify", {
        body: { type: "signup", token: "x" },
        headers: from("203.0.113.7"),
      });
      assert.notEqual(r.status, 429);
    }
    const over = await call(srv, "GET", "/verify?type=signup&token=x", {
      headers: from("203.0.113.7"),
    });
    assert.equal(over.status, 429);
    assert.equal(over.body.error_code, "over_request_rate_limit");
    const retry = Number(over.headers.get("retry-after"));
    assert.ok(retry >= 1 && retry <= 300, `Retry-After ${retry}`);

    // Another client has its own budget.
    const other = await call(srv, "POST", "/verify", {
      body: { type: "signup", token: "x" },
      headers: from("2001:db8::1"),
    });
    assert.notEqual(other.status, 429);

    // A new window opens when Retry-After has passed.
    clock.advance(retry);
    const later = await call(srv, "POST", "/verify", {
      body: { type: "signup", token: "x" },
      headers: from("203.0.113.7"),
    });
    assert.notEqual(later.status, 429);
  } finally {
    await srv.close();
  }
});

Deno.test("rate limit: /otp and /magiclink share RATE_LIMIT_OTP; /signup has RATE_LIMIT_SIGNUP", async () => {
  const srv = await startTestServer({
    AUTHSVC_RATE_LIMIT_OTP: "2/1h",
    AUTHSVC_RATE_LIMIT_SIGNUP: "2/1h",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
  }, { clock: stillNow() });
  try {
    assert.notEqual(
      (await call(srv, "POST", "/otp", { body: { email: uniqueEmail("ops") } })).status,
      429,
    );
    assert.notEqual(
      (await call(srv, "POST", "/magiclink", { body: { email: uniqueEmail("ops") } })).status,
      429,
    );
    const over = await call(srv, "POST", "/otp", { body: { email: uniqueEmail("ops") } });
    assert.equal(over.status, 429);
    assert.equal(over.body.error_code, "over_request_rate_limit");
    assert.ok(Number(over.headers.get("retry-after")) > 0);

    for (let i = 0; i < 2; i++) {
      const r = await call(srv, "POST", "/signup", {
        body: { email: uniqueEmail("ops"), password: "pw-123456" },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const third = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("ops"), password: "pw-123456" },
    });
    assert.equal(third.status, 429);
    assert.equal(third.body.error_code, "over_request_rate_limit");
  } finally {
    await srv.close();
  }
});

Deno.test("rate limit: anonymous sign-ins have their own limit (RATE_LIMIT_ANONYMOUS_USERS)", async () => {
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
    AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: "2/1h",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
  }, { clock: stillNow() });
  try {
    for (let i = 0; i < 2; i++) {
      const r = await call(srv, "POST", "/signup", { body: { data: {} } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal((r.body.user as { is_anonymous: boolean }).is_anonymous, true);
    }
    const over = await call(srv, "POST", "/signup", { body: { data: {} } });
    assert.equal(over.status, 429);
    assert.equal(over.body.error_code, "over_request_rate_limit");
    // Sign-ups with an e-mail address still work.
    const r = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("ops"), password: "pw-123456" },
    });
    assert.equal(r.status, 200);
  } finally {
    await srv.close();
  }
});

Deno.test("rate limit: /token is keyed by RATE_LIMIT_HEADER when set; its counters are bounded", async () => {
  const srv = await startTestServer({
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "2/5m",
    AUTHSVC_RATE_LIMIT_HEADER: "X-Client-Key",
  }, { clock: stillNow() });
  try {
    const grant = (key: string) =>
      call(srv, "POST", "/token?grant_type=refresh_token", {
        body: { refresh_token: "nope" },
        headers: {
          "x-client-key": key,
        },
      });
    assert.notEqual((await grant("alpha")).status, 429);
    assert.notEqual((await grant("alpha")).status, 429);
    const over = await grant("alpha");
    assert.equal(over.status, 429);
    assert.equal(over.body.error_code, "over_request_rate_limit");
    assert.ok(over.headers.get("retry-after"));
    // Same IP, another key: its own budget.
    assert.notEqual((await grant("beta")).status, 429);

    // A key made up per request: the counters stay within LOCAL_KEYS_MAX clients, and a client
    // over its limit stays over while others come and go (below the bound).
    const limiter = srv.services.limiter;
    for (let i = 0; i < 1000; i++) await limiter.hit("token", `h:made-up-${i}`);
    assert.equal((await grant("alpha")).status, 429);
    for (let i = 0; i < LOCAL_KEYS_MAX + 5000; i++) {
      await limiter.hit("token", `h:made-up-${crypto.randomUUID()}`);
    }
    assert.equal(limiter.localKeys, LOCAL_KEYS_MAX);
  } finally {
    await srv.close();
  }
});

Deno.test("rate limit: a malformed setting stops the start naming it", async () => {
  await assert.rejects(
    () => startTestServer({ AUTHSVC_RATE_LIMIT_VERIFY: "lots" }),
    /AUTHSVC_RATE_LIMIT_VERIFY/,
  );
});

Deno.test("rate limit: the contract's settings and defaults (GoTrue's names)", () => {
  const { config } = readConfig({ ...BASE_ENV });
  const r = config.rateLimit;
  assert.deepEqual(r.tokenRefresh, { count: 150, windowSec: 300 });
  assert.deepEqual(r.verify, { count: 30, windowSec: 300 });
  assert.deepEqual(r.otp, { count: 30, windowSec: 300 });
  assert.deepEqual(r.anonymousUsers, { count: 30, windowSec: 3600 });
  assert.deepEqual(r.smsSent, { count: 30, windowSec: 3600 });
  assert.equal(r.header, "");
  const set = readConfig({
    ...BASE_ENV,
    AUTHSVC_RATE_LIMIT_VERIFY: "7/1m",
    AUTHSVC_RATE_LIMIT_OTP: "8",
    AUTHSVC_RATE_LIMIT_HEADER: "X-Real-Client",
  }).config.rateLimit;
  assert.deepEqual(set.verify, { count: 7, windowSec: 60 });
  assert.deepEqual(set.otp, { count: 8, windowSec: 300 }, "a bare count keeps the default window");
  assert.equal(set.header, "X-Real-Client");
});

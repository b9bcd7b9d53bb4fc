import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import {
  accessToken,
  api,
  claims,
  type Json,
  MFA_ENV,
  signedUp,
  TestClock,
  totpAt,
} from "./_helpers.ts";

/** A signed-up user with an enrolled (unverified) TOTP factor, over plain HTTP. */
async function withFactor(srv: TestServer) {
  const { client } = await signedUp(srv);
  const token = await accessToken(client);
  const r = await api(srv, "POST", "/factors", token, { factor_type: "totp" });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const secret = (r.body.totp as Json).secret as string;
  return { token, id: r.body.id as string, secret };
}

async function challenge(srv: TestServer, token: string, id: string): Promise<string> {
  const r = await api(srv, "POST", `/factors/${id}/challenge`, token, {});
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id as string;
}

Deno.test("wrong codes fail with mfa_verification_failed and are bounded per challenge", async () => {
  const clock = new TestClock();
  const srv = await startTestServer({ ...MFA_ENV, AUTHSVC_MFA_MAX_ATTEMPTS: "3" }, { clock });
  try {
    const { token, id, secret } = await withFactor(srv);
    const good = totpAt(secret, clock.ms);
    const wrong = good === "000000" ? "111111" : "000000";
    const c1 = await challenge(srv, token, id);
    for (let i = 0; i < 3; i++) {
      const r = await api(srv, "POST", `/factors/${id}/verify`, token, {
        challenge_id: c1,
        code: wrong,
      });
      assert.equal(r.status, 422);
      assert.equal(r.body.error_code, "mfa_verification_failed");
    }
    // The fourth try is refused even with the right code: the challenge is spent.
    const spent = await api(srv, "POST", `/factors/${id}/verify`, token, {
      challenge_id: c1,
      code: good,
    });
    assert.equal(spent.status, 429);
    assert.equal(spent.body.error_code, "mfa_verification_rejected");
    assert.match(spent.body.msg as string, /create a new challenge/);
    // A new challenge takes the right code.
    const c2 = await challenge(srv, token, id);
    const ok = await api(srv, "POST", `/factors/${id}/verify`, token, {
      challenge_id: c2,
      code: good,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(claims(ok.body.access_token as string).aal, "aal2");
    // A challenge is answered once.
    const twice = await api(srv, "POST", `/factors/${id}/verify`, token, {
      challenge_id: c2,
      code: good,
    });
    assert.equal(twice.status, 422);
    assert.equal(twice.body.error_code, "mfa_challenge_expired");
  } finally {
    await srv.close();
  }
});

Deno.test("challenges expire after MFA_CHALLENGE_EXPIRY_DURATION on the server's clock", async () => {
  const clock = new TestClock();
  const srv = await startTestServer(MFA_ENV, { clock });
  try {
    const { token, id, secret } = await withFactor(srv);
    const c1 = await challenge(srv, token, id);
    clock.advance(299);
    const c2 = await challenge(srv, token, id);
    clock.advance(2); // c1 is 301 s old, c2 2 s
    const code = totpAt(secret, clock.ms);
    const late = await api(srv, "POST", `/factors/${id}/verify`, token, { challenge_id: c1, code });
    assert.equal(late.status, 422);
    assert.equal(late.body.error_code, "mfa_challenge_expired");
    const again = await api(srv, "POST", `/factors/${id}/verify`, token, {
      challenge_id: c1,
      code,
    });
    assert.equal(again.body.error_code, "mfa_factor_not_found", "an expired challenge is gone");
    const ok = await api(srv, "POST", `/factors/${id}/verify`, token, { challenge_id: c2, code });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  } finally {
    await srv.close();
  }
});

Deno.test("one step of clock drift is accepted, two are not; a code is accepted once", async () => {
  const clock = new TestClock();
  const srv = await startTestServer(MFA_ENV, { clock });
  try {
    const { token, id, secret } = await withFactor(srv);
    const verify = async (code: string) =>
      await api(srv, "POST", `/factors/${id}/verify`, token, {
        challenge_id: await challenge(srv, token, id),
        code,
      });
    // The authenticator runs 60 s behind: refused; 30 s behind: accepted.
    const twoBehind = await verify(totpAt(secret, clock.ms - 60_000));
    assert.equal(twoBehind.body.error_code, "mfa_verification_failed");
    const oneBehind = totpAt(secret, clock.ms - 30_000);
    assert.equal((await verify(oneBehind)).status, 200);
    // The same code again, on a new challenge: refused.
    const replay = await verify(oneBehind);
    assert.equal(replay.status, 422);
    assert.equal(replay.body.error_code, "mfa_verification_failed");
    assert.match(replay.body.msg as string, /already been used/);
    // The current code is newer and works; the one before it no longer does.
    assert.equal((await verify(totpAt(secret, clock.ms))).status, 200);
    // 30 s ahead (a fast phone) works too.
    clock.advance(30);
    assert.equal((await verify(totpAt(secret, clock.ms + 30_000))).status, 200);
    assert.equal(
      (await verify(totpAt(secret, clock.ms + 90_000))).body.error_code,
      "mfa_verification_failed",
    );
  } finally {
    await srv.close();
  }
});

Deno.test("enrollment limits and switches answer GoTrue's error codes", async () => {
  const srv = await startTestServer({ ...MFA_ENV, AUTHSVC_MFA_MAX_ENROLLED_FACTORS: "2" });
  const off = await startTestServer({
    ...MFA_ENV,
    AUTHSVC_MFA_TOTP_ENROLL_ENABLED: "false",
    AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "false",
  });
  try {
    const { client } = await signedUp(srv);
    const token = await accessToken(client);
    const enroll = (body: Json) => api(srv, "POST", "/factors", token, body);
    assert.equal((await enroll({ factor_type: "totp", friendly_name: "one" })).status, 200);
    const clash = await enroll({ factor_type: "totp", friendly_name: "one" });
    assert.equal(clash.status, 422);
    assert.equal(clash.body.error_code, "mfa_factor_name_conflict");
    assert.equal((await enroll({ factor_type: "totp" })).status, 200);
    const third = await enroll({ factor_type: "totp", friendly_name: "three" });
    assert.equal(third.status, 422);
    assert.equal(third.body.error_code, "too_many_enrolled_mfa_factors");

    const o = await signedUp(off);
    const offToken = await accessToken(o.client);
    const t = await api(off, "POST", "/factors", offToken, { factor_type: "totp" });
    assert.equal(t.status, 422);
    assert.equal(t.body.error_code, "mfa_totp_enroll_not_enabled");
    const p = await api(off, "POST", "/factors", offToken, {
      factor_type: "phone",
      phone: "+15551234567",
    });
    assert.equal(p.status, 422);
    assert.equal(p.body.error_code, "mfa_phone_enroll_not_enabled");
  } finally {
    await srv.close();
    await off.close();
  }
});

Deno.test("bad input gets a 4xx naming the field; other users' factors are not found", async () => {
  const srv = await startTestServer({ ...MFA_ENV, AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true" });
  try {
    const { token, id } = await withFactor(srv);
    const other = await signedUp(srv);
    const otherToken = await accessToken(other.client);
    const cases: [string, string, unknown, number, string, RegExp?][] = [
      ["POST", "/factors", {}, 400, "validation_failed", /factor_type/],
      ["POST", "/factors", { factor_type: "sms" }, 400, "validation_failed", /factor_type/],
      [
        "POST",
        "/factors",
        { factor_type: "totp", friendly_name: 7 },
        400,
        "validation_failed",
        /friendly_name/,
      ],
      ["POST", "/factors", { factor_type: "phone" }, 400, "validation_failed", /phone/],
      [
        "POST",
        "/factors",
        { factor_type: "phone", phone: "+0551234567" },
        400,
        "validation_failed",
        /E\.164/,
      ],
      ["POST", "/factors/not-a-uuid/challenge", {}, 400, "validation_failed", /factor_id/],
      [
        "POST",
        `/factors/${id}/verify`,
        { code: "123456" },
        400,
        "validation_failed",
        /challenge_id/,
      ],
      [
        "POST",
        `/factors/${id}/verify`,
        { challenge_id: "x", code: "1" },
        400,
        "validation_failed",
        /challenge_id/,
      ],
      [
        "POST",
        `/factors/${id}/verify`,
        { challenge_id: crypto.randomUUID() },
        400,
        "validation_failed",
        /code/,
      ],
      [
        "POST",
        `/factors/${id}/verify`,
        { challenge_id: crypto.randomUUID(), code: "123456" },
        422,
        "mfa_factor_not_found",
      ],
    ];
    for (const [method, path, body, status, code, msg] of cases) {
      const r = await api(srv, method, path, token, body);
      assert.equal(r.status, status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error_code, code, path);
      if (msg) assert.match(r.body.msg as string, msg);
    }
    // Another user's factor does not exist for this caller, whatever the verb.
    for (
      const [method, path] of [["POST", `/factors/${id}/challenge`], ["DELETE", `/factors/${id}`]]
    ) {
      const r = await api(srv, method, path, otherToken, method === "POST" ? {} : undefined);
      assert.equal(r.status, 404);
      assert.equal(r.body.error_code, "mfa_factor_not_found");
    }
    const anon = await srv.fetch("/factors", { method: "POST", body: "{}" });
    assert.equal(anon.status, 401);
    await anon.body?.cancel();
    // Admin routes need an admin; an unknown user is a 404.
    const notAdmin = await api(srv, "GET", `/admin/users/${crypto.randomUUID()}/factors`, token);
    assert.equal(notAdmin.status, 403);
    const adminToken = await srv.serviceRoleToken();
    const unknown = await api(
      srv,
      "GET",
      `/admin/users/${crypto.randomUUID()}/factors`,
      adminToken,
    );
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error_code, "user_not_found");
  } finally {
    await srv.close();
  }
});

Deno.test("unanswered challenges per factor are bounded, so guesses per factor are too", async () => {
  const clock = new TestClock();
  const srv = await startTestServer(MFA_ENV, { clock });
  try {
    const { token, id, secret } = await withFactor(srv);
    for (let i = 0; i < 10; i++) await challenge(srv, token, id);
    const refused = await api(srv, "POST", `/factors/${id}/challenge`, token, {});
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error_code, "over_request_rate_limit");
    // Once the open ones expire, challenges are possible again.
    clock.advance(301);
    const c = await challenge(srv, token, id);
    const ok = await api(srv, "POST", `/factors/${id}/verify`, token, {
      challenge_id: c,
      code: totpAt(secret, clock.ms),
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  } finally {
    await srv.close();
  }
});

Deno.test("parallel guesses cannot exceed the attempts, and parallel right answers raise one session once", async () => {
  const clock = new TestClock();
  const srv = await startTestServer({ ...MFA_ENV, AUTHSVC_MFA_MAX_ATTEMPTS: "3" }, { clock });
  try {
    const { token, id, secret } = await withFactor(srv);
    const good = totpAt(secret, clock.ms);
    const wrong = good === "000000" ? "111111" : "000000";
    const c1 = await challenge(srv, token, id);
    const guesses = await Promise.all(
      Array.from(
        { length: 8 },
        () => api(srv, "POST", `/factors/${id}/verify`, token, { challenge_id: c1, code: wrong }),
      ),
    );
    const codes = guesses.map((g) => g.body.error_code).sort();
    assert.deepEqual(codes, [
      ...Array(3).fill("mfa_verification_failed"),
      ...Array(5).fill("mfa_verification_rejected"),
    ]);

    const c2 = await challenge(srv, token, id);
    const answers = await Promise.all(
      Array.from(
        { length: 3 },
        () => api(srv, "POST", `/factors/${id}/verify`, token, { challenge_id: c2, code: good }),
      ),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 422, 422]);
  } finally {
    await srv.close();
  }
});

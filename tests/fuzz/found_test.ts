/**
 * Reproductions of defects the fuzz found (tests/fuzz/), each through the
 * HTTP API: a request answered with an error must leave no row behind.
 */
import assert from "node:assert/strict";
import { postJson, startTestServer, type TestServer } from "../helpers/server.ts";
import { withEmail } from "../server/email/_helpers.ts";
import { withPhoneServer } from "../server/phone/_helpers.ts";
import { call } from "../helpers/http.ts";

const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

async function rows(srv: TestServer, table: string): Promise<number> {
  const [r] = await srv.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${srv.db.t(table)}`,
  );
  return r.n;
}

async function confirmed(srv: TestServer, email: string, password = "Found-pw-1234") {
  const admin = await srv.serviceRoleToken();
  const r = await call(srv, "POST", "/admin/users", {
    body: { email, password, email_confirm: true },
    token: admin,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id as string;
}

for (const path of ["/recover", "/magiclink"]) {
  Deno.test(`found: POST ${path} with PKCE refused by the mail interval leaves no flow state`, async () => {
    await withEmail({}, async ({ srv, smtp }) => {
      const email = "found-flow@example.com";
      await confirmed(srv, email);
      const body = { email, code_challenge: CHALLENGE, code_challenge_method: "s256" };
      const first = await postJson(srv, path, body);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      await smtp.waitForMail(email);
      const before = await rows(srv, "flow_state");
      const second = await postJson(srv, path, body);
      assert.equal(second.status, 429, JSON.stringify(second.body));
      assert.equal(await rows(srv, "flow_state"), before, "the refused request left a flow state");
    });
  });
}

Deno.test("found: PUT /user with a new phone and a weak password sends no code and stores nothing", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms }) => {
    const email = "found-weak@example.com";
    await confirmed(srv, email);
    const signIn = await postJson(srv, "/token?grant_type=password", {
      email,
      password: "Found-pw-1234",
    });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const token = signIn.body.access_token as string;
    const before = { otp: await rows(srv, "one_time_tokens"), sent: await rows(srv, "send_log") };
    const r = await call(srv, "PUT", "/user", {
      body: { phone: "+15550001234", password: "short" },
      token: token,
    });
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.error_code, "weak_password");
    assert.deepEqual(
      { otp: await rows(srv, "one_time_tokens"), sent: await rows(srv, "send_log") },
      before,
    );
    assert.equal(sms.messages.length, 0, "a code went out");
    const me = await call(srv, "GET", "/user", { token: token });
    assert.equal(me.body.new_phone ?? "", "", "a phone change is pending");
  });
});

Deno.test("found: GET /authorize with a huge query answers 400, not a Location header of its size", async () => {
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_GITHUB_ENABLED: "true",
    AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID: "found-client",
    AUTHSVC_EXTERNAL_GITHUB_SECRET: "found-secret",
    AUTHSVC_EXTERNAL_GITHUB_REDIRECT_URI: "http://localhost:8081/callback",
  });
  try {
    const ok = await srv.fetch("/authorize?provider=github&prompt=consent", { redirect: "manual" });
    await ok.body?.cancel();
    assert.equal(ok.status, 302);
    assert.match(ok.headers.get("location") ?? "", /prompt=consent/);
    for (
      const query of [
        `type=${"a".repeat(20_000)}`,
        `prompt=${"a".repeat(9_000)}`,
      ]
    ) {
      const res = await srv.fetch(`/authorize?provider=github&${query}`, { redirect: "manual" });
      const text = await res.text();
      assert.equal(res.status, 400, `${res.headers.get("location")?.length} ${text}`);
      const body = JSON.parse(text);
      assert.equal(body.error_code, "validation_failed");
      assert.equal(res.headers.get("location"), null);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("found: PUT /user with a new phone and another user's e-mail sends no SMS and stores nothing", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms }) => {
    await confirmed(srv, "found-taken@example.com");
    const email = "found-phone-mail@example.com";
    await confirmed(srv, email);
    const signIn = await postJson(srv, "/token?grant_type=password", {
      email,
      password: "Found-pw-1234",
    });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const token = signIn.body.access_token as string;
    const before = { otp: await rows(srv, "one_time_tokens"), sent: await rows(srv, "send_log") };
    const cases: [Record<string, unknown>, number, string][] = [
      [{ phone: "+15550001235", email: "found-taken@example.com" }, 422, "email_exists"],
      [
        { phone: "+15550001236", email: `${"a".repeat(320)}@example.com` },
        400,
        "validation_failed",
      ],
    ];
    for (const [body, status, code] of cases) {
      const r = await call(srv, "PUT", "/user", { body: body, token: token });
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body.error_code, code);
    }
    assert.equal(sms.messages.length, 0, "an SMS went out for a refused request");
    assert.deepEqual(
      { otp: await rows(srv, "one_time_tokens"), sent: await rows(srv, "send_log") },
      before,
    );
    const me = await call(srv, "GET", "/user", { token: token });
    assert.equal(me.body.new_phone ?? "", "", "a phone change is pending");
    // The same phone alone is accepted, and its code is the one SMS.
    const ok = await call(srv, "PUT", "/user", { body: { phone: "+15550001235" }, token: token });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(sms.messages.length, 1);
  });
});

Deno.test("found: PUT /user to an address another user's pending change goes to answers like GoTrue: 200", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const tokens: string[] = [];
    for (const who of ["twin-a", "twin-b"]) {
      const email = `found-${who}@example.com`;
      await confirmed(srv, email);
      const r = await postJson(srv, "/token?grant_type=password", {
        email,
        password: "Found-pw-1234",
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      tokens.push(r.body.access_token as string);
    }
    // GoTrue (user.go): the duplicate check reads confirmed addresses only, and
    // SMTP_MAX_FREQUENCY counts per user (email_change_sent_at): the second user's change
    // to the same address is pending too; whoever confirms first gets it.
    const target = "found-twin-target@example.com";
    for (const token of tokens) {
      const r = await call(srv, "PUT", "/user", { body: { email: target }, token: token });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.new_email, target);
    }
    await smtp.waitForMail(target);
    await smtp.waitForMail(target);
    // The same user asking again within SMTP_MAX_FREQUENCY, for any address: 429.
    const again = await call(srv, "PUT", "/user", {
      body: { email: "found-twin-other@example.com" },
      token: tokens[0],
    });
    assert.equal(again.status, 429, JSON.stringify(again.body));
    assert.equal(again.body.error_code, "over_email_send_rate_limit");
    // An address a user has (confirmed) is taken: 422 email_exists, before any limit.
    const taken = await call(srv, "PUT", "/user", {
      body: { email: "found-twin-b@example.com" },
      token: tokens[0],
    });
    assert.equal(taken.status, 422, JSON.stringify(taken.body));
    assert.equal(taken.body.error_code, "email_exists");
    // So is the address of another user's identity (a provider login with another address),
    // as GoTrue's IsDuplicatedEmail has it.
    const owner = await confirmed(srv, "found-twin-c@example.com");
    await srv.services.users.createIdentity({
      user_id: owner,
      provider: "github",
      provider_id: "found-twin-gh",
      identity_data: { sub: "found-twin-gh", email: "found-twin-gh@example.com" },
    });
    const viaIdentity = await call(srv, "PUT", "/user", {
      body: { email: "found-twin-gh@example.com" },
      token: tokens[0],
    });
    assert.equal(viaIdentity.status, 422, JSON.stringify(viaIdentity.body));
    assert.equal(viaIdentity.body.error_code, "email_exists");
  });
});

Deno.test("found: PUT /user refused for a taken e-mail keeps the reauthentication nonce", async () => {
  await withEmail(
    { AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "true" },
    async ({ srv, smtp }) => {
      await confirmed(srv, "found-nonce-taken@example.com");
      const email = "found-nonce@example.com";
      await confirmed(srv, email);
      const signIn = await postJson(srv, "/token?grant_type=password", {
        email,
        password: "Found-pw-1234",
      });
      assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
      const token = signIn.body.access_token as string;
      const ra = await call(srv, "GET", "/reauthenticate", { token: token });
      assert.equal(ra.status, 200, JSON.stringify(ra.body));
      const { code } = await smtp.waitForMail(email, { subject: "Confirm reauthentication" });
      const refused = await call(srv, "PUT", "/user", {
        body: {
          password: "Found-new-pw-1",
          nonce: code,
          email: "found-nonce-taken@example.com",
        },
        token: token,
      });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.error_code, "email_exists");
      // The refused request did not use the nonce up.
      const ok = await call(srv, "PUT", "/user", {
        body: { password: "Found-new-pw-1", nonce: code },
        token: token,
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    },
  );
});

Deno.test("found: POST /admin/users with a password over 72 bytes answers 400, not 500, and makes no user", async () => {
  const srv = await startTestServer({});
  try {
    const admin = await srv.serviceRoleToken();
    const before = await rows(srv, "users");
    // Found by the full fuzz pass (FUZZ_SEED=20251125, POST /admin/users #2107): bcrypt
    // reads at most 72 bytes and the hashing worker threw; GoTrue answers 400 here.
    for (const password of ["a".repeat(73), "é".repeat(37)]) {
      const r = await call(srv, "POST", "/admin/users", {
        body: {
          phone: "15556663305",
          password,
        },
        token: admin,
      });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error_code, "validation_failed");
      assert.match(String(r.body.msg), /72/);
    }
    assert.equal(await rows(srv, "users"), before);
    const ok = await call(srv, "POST", "/admin/users", {
      body: {
        phone: "15556663305",
        password: "a".repeat(72),
      },
      token: admin,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  } finally {
    await srv.close();
  }
});

Deno.test("found: POST /resend email_change refused by the interval changes no row", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    // Found by the full fuzz pass (FUZZ_SEED=20251125, POST /resend #979): the resend reset
    // email_change_confirm_status before the send limits refused the mail.
    const email = "found-resend@example.com";
    await confirmed(srv, email);
    const signIn = await postJson(srv, "/token?grant_type=password", {
      email,
      password: "Found-pw-1234",
    });
    const token = signIn.body.access_token as string;
    const changed = await call(srv, "PUT", "/user", {
      body: { email: "found-resend-new@example.com" },
      token: token,
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    await smtp.waitForMail("found-resend-new@example.com");
    const row = async () =>
      (await srv.db.query<{ updated_at: Date; s: number }>(
        `SELECT updated_at, email_change_confirm_status AS s FROM ${srv.db.t("users")}
         WHERE email = $1`,
        [email],
      ))[0];
    // A confirmation of the current address sets the status (secure change) ...
    await srv.db.query(
      `UPDATE ${srv.db.t("users")} SET email_change_confirm_status = 1 WHERE email = $1`,
      [email],
    );
    const before = await row();
    for (const address of [email, "found-resend-new@example.com"]) {
      const r = await postJson(srv, "/resend", { type: "email_change", email: address });
      assert.equal(r.status, 429, JSON.stringify(r.body));
      assert.equal(r.body.error_code, "over_email_send_rate_limit");
    }
    // ... and a refused resend leaves it (and the row) as it was.
    assert.deepEqual(await row(), before);
  });
});

Deno.test("found: POST /invite to an address the mail server refuses answers 400 email_address_invalid, no user", async () => {
  await withEmail({}, async ({ srv }) => {
    // Found by the full fuzz pass (FUZZ_SEED=20251125, POST /invite #2456): a 255-character
    // address passes GoTrue's length check, but RFC 5321 allows 254 octets at most and the
    // SMTP server answers RCPT TO with 501. That was a 500 email_send_failed.
    const admin = await srv.serviceRoleToken();
    const before = await rows(srv, "users");
    const email = `${"a".repeat(243)}@example.com`;
    const r = await call(srv, "POST", "/invite", { body: { email }, token: admin });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error_code, "email_address_invalid");
    assert.equal(await rows(srv, "users"), before, "the invited user stayed");
  });
});

Deno.test("found: console cookies that cannot be a token (a NUL, non-Latin-1) are signed out, not a 500", async () => {
  const srv = await startTestServer({ AUTHSVC_CONSOLE_ENABLED: "true" });
  try {
    const csrf = "found-csrf";
    for (
      const [cookie, path] of [
        ["authsvc_console_mfa", "/console/api/mfa/challenge"],
        ["authsvc_console_at", "/console/api/me"],
        ["authsvc_console_rt", "/console/api/me"],
        ["authsvc_console_at", "/console/api/gotrue/admin/users"],
      ]
    ) {
      for (const value of ["a\u0000b", "\u202e\u{1f600}", "\u00e9t\u00e9"]) {
        const res = await srv.fetch(path, {
          method: path.includes("/mfa/") ? "POST" : "GET",
          headers: {
            cookie: `authsvc_console_csrf=${csrf}; ${cookie}=${encodeURIComponent(value)}`,
            "x-csrf-token": csrf,
            "content-type": "application/json",
          },
          body: path.includes("/mfa/")
            ? JSON.stringify({ factor_id: crypto.randomUUID() })
            : undefined,
        });
        const body = await res.json();
        assert.equal(
          res.status,
          401,
          `${cookie}=${JSON.stringify(value)} ${path}: ${JSON.stringify(body)}`,
        );
        assert.equal(body.error_code, "no_authorization");
      }
    }
  } finally {
    await srv.close();
  }
});

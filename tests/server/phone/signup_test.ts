import assert from "node:assert/strict";
import { postJson, startTestServer } from "../../helpers/server.ts";
import { SMS_FAKE_PROVIDERS } from "../../helpers/sms_fakes.ts";
import { withPhoneServer } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

const PASSWORD = "correct horse battery";

for (const provider of SMS_FAKE_PROVIDERS) {
  Deno.test(`${provider}: phone sign-up texts a code; the password grant waits for it`, async () => {
    await withPhoneServer(provider, {}, async ({ srv, sms }) => {
      const r = await postJson(srv, "/signup", { phone: "+1 555 123 4567", password: PASSWORD });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.phone, "15551234567");
      assert.ok(r.body.confirmation_sent_at);
      assert.equal(r.body.access_token, undefined);
      assert.deepEqual(sms.violations, []);
      assert.equal(sms.messagesTo("+15551234567").length, 1);
      assert.match(sms.lastCode("+15551234567") ?? "", /^\d{6}$/);
      assert.match(sms.messages[0].text, /^Your code is \d{6}$/);
      const t = await postJson(srv, "/token?grant_type=password", {
        phone: "+15551234567",
        password: PASSWORD,
      });
      assert.equal(t.status, 400);
      assert.equal(t.body.error_code, "phone_not_confirmed");
      const rows = await srv.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${srv.db.t("one_time_tokens")} WHERE token_type = 'sms'`,
      );
      assert.equal(rows[0].n, 1);
      const dump = JSON.stringify(
        await srv.db.query(`SELECT * FROM ${srv.db.t("one_time_tokens")}`),
      );
      assert.ok(!dump.includes(sms.lastCode("15551234567")!), "the code is not stored");
    });
  });
}

Deno.test("phone sign-up with SMS_AUTOCONFIRM needs no SMS provider; a duplicate is 400", async () => {
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
  });
  try {
    const r = await postJson(srv, "/signup", { phone: "+447700900123", password: PASSWORD });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.access_token);
    const user = r.body.user as Record<string, unknown>;
    assert.equal(user.phone, "447700900123");
    assert.ok(user.phone_confirmed_at);
    const dup = await postJson(srv, "/signup", { phone: "447700900123", password: PASSWORD });
    assert.equal(dup.status, 400);
    assert.equal(dup.body.code, 400);
    assert.match(String(dup.body.msg), /already registered/);
    const t = await postJson(srv, "/token?grant_type=password", {
      phone: "+44 7700 900123",
      password: PASSWORD,
    });
    assert.equal(t.status, 200, JSON.stringify(t.body));
    assert.equal((t.body.user as Record<string, unknown>).phone, "447700900123");
  } finally {
    await srv.close();
  }
});

Deno.test("bad phone numbers are a 422 naming the field", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms }) => {
    for (const phone of ["5", "+0 555 1234", "phone", "+1555123456789012"]) {
      const r = await postJson(srv, "/signup", { phone, password: PASSWORD });
      assert.equal(r.status, 422, phone);
      assert.match(String(r.body.msg), /phone/i);
    }
    const u = await postJson(srv, "/signup", { email: "a@example.com", password: PASSWORD });
    assert.equal(u.status, 200);
    assert.equal(sms.messages.length, 0);
  });
});

Deno.test("a number written with spaces, dashes, dots or parentheses is the same number everywhere", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms }) => {
    const up = await postJson(srv, "/signup", { phone: "+1 (555) 000-4444", password: PASSWORD });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal((up.body as { phone?: string }).phone, "15550004444");
    const v = await postJson(srv, "/verify", {
      type: "sms",
      phone: "+1.555.000.4444",
      token: sms.lastCode("15550004444"),
    });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    const t = await postJson(srv, "/token?grant_type=password", {
      phone: "+1-555-000-4444",
      password: PASSWORD,
    });
    assert.equal(t.status, 200, JSON.stringify(t.body));
    const admin = await postJson(srv, "/admin/users", { phone: "+1 (555) 000-5555" }, {
      authorization: `Bearer ${await srv.serviceRoleToken()}`,
    });
    assert.equal(admin.status, 200, JSON.stringify(admin.body));
    assert.equal(admin.body.phone, "15550005555");
  });
});

Deno.test("gateway down during sign-up: a clear error, and the sign-up can simply be retried", async () => {
  await withPhoneServer("messagebird", {}, async ({ srv, sms }) => {
    sms.failWith("server", 1);
    const r = await postJson(srv, "/signup", { phone: "+15550001111", password: PASSWORD });
    assert.equal(r.status, 422);
    assert.equal(r.body.error_code, "sms_send_failed");
    assert.match(String(r.body.msg), /messagebird: internal error/);
    assert.equal(await srv.services.users.findByPhone("15550001111"), null);
    // the failed send does not count against SMS_MAX_FREQUENCY: the retry goes out at once
    const again = await postJson(srv, "/signup", { phone: "+15550001111", password: PASSWORD });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(sms.messagesTo("15550001111").length, 1);
  });
});

Deno.test("a refused recipient is a 400 with the provider's message", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms }) => {
    sms.failWith("recipient");
    const r = await postJson(srv, "/signup", { phone: "+15550002222", password: PASSWORD });
    assert.equal(r.status, 422);
    assert.equal(r.body.error_code, "sms_send_failed");
    assert.match(String(r.body.msg), /not a valid phone number\. \(code 21211\)/);
  });
});

Deno.test("repeated sign-up of an unconfirmed number: same answer, a new code only after SMS_MAX_FREQUENCY", async () => {
  await withPhoneServer("vonage", {}, async ({ srv, sms, clock }) => {
    const first = await postJson(srv, "/signup", { phone: "+15550003333", password: PASSWORD });
    assert.equal(first.status, 200);
    const second = await postJson(srv, "/signup", { phone: "+15550003333", password: PASSWORD });
    assert.equal(second.status, 200);
    assert.notEqual(second.body.id, first.body.id, "a duplicate gets fabricated data");
    assert.equal(sms.messagesTo("15550003333").length, 1, "within 60 s no second code");
    clock.advance(61);
    const third = await postJson(srv, "/signup", { phone: "+15550003333", password: PASSWORD });
    assert.equal(third.status, 200);
    assert.equal(sms.messagesTo("15550003333").length, 2);
  });
});

Deno.test("sms_sent events carry the provider; requests are audited; logs hold no code or key", async () => {
  await withPhoneServer("textlocal", { LOG_LEVEL: "debug" }, async ({ srv, sms }) => {
    const seen: unknown[] = [];
    srv.services.events.on("sms_sent", (a) => seen.push(a));
    const r = await call(srv, "POST", "/signup", {
      body: { phone: "+15550004444", password: PASSWORD },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(seen, [{ provider: "textlocal" }]);
    const rows = await srv.db.query<{ action: string }>(
      `SELECT payload->>'action' AS action FROM ${srv.db.t("audit_log_entries")}`,
    );
    const actions = rows.map((r) => r.action).sort();
    assert.deepEqual(actions, ["user_confirmation_requested", "user_signedup"]);
    const code = sms.lastCode("15550004444")!;
    assert.ok(srv.logs.some((l) => l.includes('"sms sent"')), "the send is logged");
    assert.ok(!srv.logs.some((l) => l.includes(code)), "the code never reaches the log");
    assert.ok(!srv.logs.some((l) => l.includes("textlocal-api-key-secret")), "nor the API key");
  });
});

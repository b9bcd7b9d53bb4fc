import assert from "node:assert/strict";
import { parsePhone } from "../../../server/auth/phone.ts";
import { AuthError, statusOf } from "../../../server/api/errors.ts";
import { withPhoneServer } from "./_helpers.ts";

Deno.test("parsePhone: E.164 in, storage digits out; anything else is a 422 naming the field", () => {
  assert.equal(parsePhone("+1 555 123 4567"), "15551234567");
  assert.equal(parsePhone("+1-555-123-4567"), "15551234567");
  assert.equal(parsePhone("(+44) 7700.900123"), "447700900123");
  assert.equal(parsePhone("15551234567"), "15551234567");
  for (const bad of ["+", "0123", "+1 555 abc", "1234567890123456", "++15551234567"]) {
    assert.throws(() => parsePhone(bad), (e: unknown) => {
      assert.ok(e instanceof AuthError);
      assert.equal(statusOf(e), 422);
      assert.match(e.message, /phone number format \(E\.164 required\)/);
      return true;
    });
  }
  assert.throws(() => parsePhone("x", "new_phone"), /in new_phone/);
  assert.throws(() => parsePhone(""), /phone is required/);
  assert.throws(() => parsePhone(undefined), /phone is required/);
  assert.throws(() => parsePhone(15551234567), /phone must be a string/);
});

Deno.test("a code dies after SMS_OTP_MAX_ATTEMPTS wrong guesses, even the right one after that", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_OTP_MAX_ATTEMPTS: "3" }, async ({ srv, sms }) => {
    const s = srv.services;
    const user = await s.users.create({ phone: "15551230001" });
    await s.sms.sendUserCode(user, "sms");
    const code = sms.lastCode("15551230001")!;
    const wrong = code === "000000" ? "111111" : "000000";
    for (let i = 0; i < 3; i++) {
      await assert.rejects(s.sms.verify(["sms"], "15551230001", wrong), /expired or is invalid/);
    }
    await assert.rejects(s.sms.verify(["sms"], "15551230001", code), /expired or is invalid/);
  });
});

Deno.test("concurrent guesses cannot exceed SMS_OTP_MAX_ATTEMPTS: the right code sent after 30 wrong ones at once is refused", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_OTP_MAX_ATTEMPTS: "3" }, async ({ srv, sms }) => {
    const s = srv.services;
    const user = await s.users.create({ phone: "15551230009" });
    await s.sms.sendUserCode(user, "sms");
    const code = sms.lastCode("15551230009")!;
    const guesses = Array.from({ length: 30 }, (_, i) => String(100000 + i))
      .filter((g) => g !== code);
    // All in flight together, the right one last: only the first 3 may be compared.
    const results = await Promise.allSettled(
      [...guesses, code].map((g) => s.sms.verify(["sms"], "15551230009", g)),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 0);
    await assert.rejects(s.sms.verify(["sms"], "15551230009", code), /expired or is invalid/);
  });
});

Deno.test("concurrent code requests for one number: one SMS goes out, and its code is the one that works", async () => {
  await withPhoneServer("textlocal", {}, async ({ srv, sms }) => {
    const s = srv.services;
    const user = await s.users.create({ phone: "15551230010" });
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => s.sms.sendUserCode(user, "sms")),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results) {
      if (r.status === "rejected") assert.equal(r.reason.errorCode, "over_sms_send_rate_limit");
    }
    assert.equal(sms.messagesTo("15551230010").length, 1);
    const row = await s.sms.verify(["sms"], "15551230010", sms.lastCode("15551230010")!);
    assert.equal(row.user_id, user.id);
  });
});

Deno.test("a right code works once, within SMS_OTP_EXP only", async () => {
  await withPhoneServer("vonage", { AUTHSVC_SMS_OTP_EXP: "120" }, async ({ srv, sms, clock }) => {
    const s = srv.services;
    const user = await s.users.create({ phone: "15551230002" });
    await s.sms.sendUserCode(user, "sms");
    const row = await s.sms.verify(["sms"], "15551230002", sms.lastCode("15551230002")!);
    assert.equal(row.user_id, user.id);
    await assert.rejects(
      s.sms.verify(["sms"], "15551230002", sms.lastCode("15551230002")!),
      /expired or is invalid/,
    );
    clock.advance(61);
    await s.sms.sendUserCode(user, "sms");
    clock.advance(121);
    await assert.rejects(
      s.sms.verify(["sms"], "15551230002", sms.lastCode("15551230002")!),
      /expired or is invalid/,
    );
  });
});

Deno.test("SMS_OTP_LENGTH and SMS_TEMPLATE shape the message", async () => {
  await withPhoneServer("messagebird", {
    AUTHSVC_SMS_OTP_LENGTH: "8",
    AUTHSVC_SMS_TEMPLATE: "{{ .Code }} is your AuthSvc code",
  }, async ({ srv, sms }) => {
    const user = await srv.services.users.create({ phone: "15551230003" });
    const fresh = await srv.services.sms.sendUserCode(user, "sms");
    assert.ok(fresh.confirmation_sent_at);
    assert.match(sms.messages[0].text, /^\d{8} is your AuthSvc code$/);
  });
});

Deno.test("SMS_MAX_FREQUENCY per number and RATE_LIMIT_SMS_SENT overall: 429 over_sms_send_rate_limit", async () => {
  await withPhoneServer("textlocal", {
    AUTHSVC_SMS_MAX_FREQUENCY: "30",
    AUTHSVC_RATE_LIMIT_SMS_SENT: "3/1h",
  }, async ({ srv, sms, clock }) => {
    const s = srv.services;
    const a = await s.users.create({ phone: "15551230004" });
    await s.sms.sendUserCode(a, "sms");
    const e1 = await s.sms.sendUserCode(a, "sms").catch((e) => e);
    assert.ok(e1 instanceof AuthError);
    assert.equal(statusOf(e1), 429);
    assert.equal(e1.errorCode, "over_sms_send_rate_limit");
    assert.ok(e1.retryAfterSec! > 0);
    clock.advance(31);
    await s.sms.sendUserCode(a, "sms");
    const b = await s.users.create({ phone: "15551230005" });
    await s.sms.sendUserCode(b, "sms");
    const c = await s.users.create({ phone: "15551230006" });
    const e2 = await s.sms.sendUserCode(c, "sms").catch((e) => e);
    assert.ok(e2 instanceof AuthError);
    assert.equal(statusOf(e2), 429);
    assert.equal(e2.errorCode, "over_sms_send_rate_limit");
    assert.equal(sms.messages.length, 3);
    // the code of the refused send was never issued: the earlier one still works
    await s.sms.verify(["sms"], "15551230005", sms.lastCode("15551230005")!);
  });
});

Deno.test("gateway down: the previous code keeps working and nothing is counted", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_OTP_EXP: "600" }, async ({ srv, sms, clock }) => {
    const s = srv.services;
    const user = await s.users.create({ phone: "15551230007" });
    await s.sms.sendUserCode(user, "sms");
    const first = sms.lastCode("15551230007")!;
    clock.advance(61);
    sms.hang();
    const e = await s.sms.sendUserCode(user, "sms").catch((e) => e);
    assert.ok(e instanceof AuthError);
    assert.equal(statusOf(e), 422); // GoTrue's answer to any failed send
    assert.equal(e.situation, "upstream_timeout");
    assert.equal(e.errorCode, "sms_send_failed");
    sms.resume();
    await sms.stop();
    const down = await s.sms.sendUserCode(user, "sms").catch((e) => e);
    assert.equal(statusOf(down), 422);
    assert.equal(down.situation, "upstream_failed");
    const sent = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("send_log")} WHERE channel = 'sms'`,
    );
    assert.equal(sent[0].n, 1, "only the message actually sent counts");
    const row = await s.sms.verify(["sms"], "15551230007", first);
    assert.equal(row.user_id, user.id);
  });
});

Deno.test("sendCode (for MFA phone factors) returns the code it texted", async () => {
  await withPhoneServer("vonage", {}, async ({ srv, sms }) => {
    const r = await srv.services.sms.sendCode({ phone: "15551230008", kind: "mfa_challenge" });
    assert.match(r.code, /^\d{6}$/);
    assert.equal(r.provider, "vonage");
    assert.equal(sms.lastCode("15551230008"), r.code);
    const again = await srv.services.sms.sendCode({ phone: "15551230008", kind: "mfa_challenge" })
      .catch((e) => e);
    assert.equal(statusOf(again), 429);
  });
});

Deno.test("no SMS_PROVIDER: sending a code is a clear error", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_PROVIDER: "" }, async ({ srv }) => {
    const r = await srv.fetch("/signup", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ phone: "+15551230009", password: "correct horse battery" }),
    });
    const body = await r.json();
    assert.equal(r.status, 500);
    assert.equal(body.error_code, "sms_send_failed");
    assert.match(body.msg, /no SMS provider is configured/);
    assert.equal(await srv.services.users.findByPhone("15551230009"), null);
  });
});

import assert from "node:assert/strict";
import { postJson } from "../../helpers/server.ts";
import { SMS_FAKE_PROVIDERS } from "../../helpers/sms_fakes.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { authClient, withPhoneServer } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

const PASSWORD = "correct horse battery";

for (const provider of SMS_FAKE_PROVIDERS) {
  Deno.test(`${provider}: sign up by phone, confirm with the texted code, sign in with the password`, async () => {
    await withPhoneServer(provider, {}, async ({ srv, sms }) => {
      const phone = "+15552220001";
      const r = await postJson(srv, "/signup", { phone, password: PASSWORD });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const v = await postJson(srv, "/verify", {
        type: "sms",
        phone,
        token: sms.lastCode(phone),
      });
      assert.equal(v.status, 200, JSON.stringify(v.body));
      assert.ok(v.body.access_token);
      assert.ok(v.body.refresh_token);
      const user = v.body.user as Record<string, unknown>;
      assert.equal(user.phone, "15552220001");
      assert.ok(user.phone_confirmed_at);
      const t = await postJson(srv, "/token?grant_type=password", { phone, password: PASSWORD });
      assert.equal(t.status, 200, JSON.stringify(t.body));
      // the code was single use
      const again = await postJson(srv, "/verify", {
        type: "sms",
        phone,
        token: sms.lastCode(phone),
      });
      assert.equal(again.status, 403);
      assert.equal(again.body.error_code, "otp_expired");
      assert.deepEqual(sms.violations, []);
    });
  });

  Deno.test(`${provider}: auth-js signInWithOtp({ phone }) and verifyOtp({ type: "sms" })`, async () => {
    await withPhoneServer(provider, {}, async ({ srv, sms }) => {
      const client = authClient(srv);
      const phone = "+15552220002";
      const sent = await client.signInWithOtp({ phone });
      assert.equal(sent.error, null, String(sent.error?.message));
      assert.ok(sent.data.messageId);
      const { data, error } = await client.verifyOtp({
        phone,
        token: sms.lastCode(phone)!,
        type: "sms",
        options: { redirectTo: "http://localhost:3000/welcome" },
      });
      assert.equal(error, null, String(error?.message));
      assert.equal(data.user?.phone, "15552220002");
      assert.ok(data.session?.access_token);
      const me = await client.getUser();
      assert.equal(me.data.user?.phone, "15552220002");
      assert.deepEqual(me.data.user?.app_metadata.providers, ["phone"]);
    });
  });
}

Deno.test("POST /otp: create_user false refuses unknown numbers, known ones get a code", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms, clock }) => {
    const unknown = await postJson(srv, "/otp", { phone: "+15552220003", create_user: false });
    assert.equal(unknown.status, 422);
    assert.equal(unknown.body.error_code, "otp_disabled");
    assert.equal(sms.messages.length, 0);
    const created = await postJson(srv, "/otp", { phone: "+15552220003" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    clock.advance(61);
    const known = await postJson(srv, "/otp", { phone: "+15552220003", create_user: false });
    assert.equal(known.status, 200, JSON.stringify(known.body));
    assert.equal(sms.messagesTo("15552220003").length, 2);
    const tooSoon = await postJson(srv, "/otp", { phone: "+15552220003" });
    assert.equal(tooSoon.status, 429);
    assert.equal(tooSoon.body.error_code, "over_sms_send_rate_limit");
    assert.ok(tooSoon.headers.get("retry-after"));
    const bad = await postJson(srv, "/otp", { phone: "+1 555 CALL ME" });
    assert.equal(bad.status, 422);
    assert.match(String(bad.body.msg), /phone/);
  });
});

Deno.test("POST /otp when the gateway is down: a clear error, no user left behind, retry works", async () => {
  await withPhoneServer("vonage", {}, async ({ srv, sms }) => {
    sms.failWith("server", 1);
    const r = await postJson(srv, "/otp", { phone: "+15552220004" });
    assert.equal(r.status, 422); // GoTrue answers any failed send so (auth-js keeps the code)
    assert.equal(r.body.error_code, "sms_send_failed");
    assert.match(String(r.body.msg), /vonage: Internal Error \(status 5\)/);
    assert.equal(await srv.services.users.findByPhone("15552220004"), null);
    const again = await postJson(srv, "/otp", { phone: "+15552220004" });
    assert.equal(again.status, 200);
    const v = await postJson(srv, "/verify", {
      type: "sms",
      phone: "+15552220004",
      token: sms.lastCode("15552220004"),
    });
    assert.equal(v.status, 200, JSON.stringify(v.body));
  });
});

Deno.test("POST /verify: wrong codes are bounded per code", async () => {
  await withPhoneServer(
    "messagebird",
    { AUTHSVC_SMS_OTP_MAX_ATTEMPTS: "2" },
    async ({ srv, sms }) => {
      const phone = "+15552220005";
      assert.equal((await postJson(srv, "/otp", { phone })).status, 200);
      const code = sms.lastCode(phone)!;
      const wrong = code === "999999" ? "888888" : "999999";
      for (let i = 0; i < 2; i++) {
        const w = await postJson(srv, "/verify", { type: "sms", phone, token: wrong });
        assert.equal(w.status, 403);
        assert.equal(w.body.error_code, "otp_expired");
      }
      const right = await postJson(srv, "/verify", { type: "sms", phone, token: code });
      assert.equal(right.status, 403, "the code died after the wrong guesses");
      const bad = await postJson(srv, "/verify", { type: "sms", phone: "nope", token: code });
      assert.equal(bad.status, 422);
      const missing = await postJson(srv, "/verify", { type: "sms", token: code });
      assert.equal(missing.status, 422);
      assert.match(String(missing.body.msg), /phone is required/);
    },
  );
});

Deno.test("phone change: code to the new number, /verify phone_change moves the user, notification mail", async () => {
  const smtp = await startSmtp();
  try {
    await withPhoneServer("textlocal", {
      ...smtp.env,
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
      AUTHSVC_MAILER_NOTIFICATIONS_PHONE_CHANGED_ENABLED: "true",
      AUTHSVC_SMS_AUTOCONFIRM: "false",
    }, async ({ srv, sms }) => {
      const up = await postJson(srv, "/signup", { email: "mover@example.com", password: PASSWORD });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const token = String(up.body.access_token);
      const put = await call(srv, "PUT", "/user", {
        body: { phone: "+15552220006" },
        token: token,
      });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.ok(put.body.phone_change_sent_at);
      // resend phone_change: within SMS_MAX_FREQUENCY it is refused
      const early = await postJson(srv, "/resend", { type: "phone_change", phone: "+15552220006" });
      assert.equal(early.status, 429);
      const v = await postJson(srv, "/verify", {
        type: "phone_change",
        phone: "+15552220006",
        token: sms.lastCode("15552220006"),
      }, {});
      assert.equal(v.status, 200, JSON.stringify(v.body));
      assert.ok(v.body.access_token);
      const me = await call(srv, "GET", "/user", { token: String(v.body.access_token) });
      assert.equal(me.body.phone, "15552220006");
      assert.ok(me.body.phone_confirmed_at);
      assert.equal(me.body.new_phone, undefined);
      // a first number is no change of one: the notification comes with the next change
      const next = await call(srv, "PUT", "/user", { body: { phone: "+15552220016" }, token });
      assert.equal(next.status, 200, JSON.stringify(next.body));
      const v2 = await postJson(srv, "/verify", {
        type: "phone_change",
        phone: "+15552220016",
        token: sms.lastCode("15552220016"),
      }, {});
      assert.equal(v2.status, 200, JSON.stringify(v2.body));
      const mail = await smtp.waitForMail("mover@example.com", { subject: /phone/i });
      assert.match(mail.text, /15552220006/);
      assert.match(mail.text, /15552220016/);
      // the new number is the one that signs in now
      const old = await postJson(srv, "/token?grant_type=password", {
        phone: "+15552220006",
        password: PASSWORD,
      });
      assert.equal(old.status, 400);
      const t = await postJson(srv, "/token?grant_type=password", {
        phone: "+15552220016",
        password: PASSWORD,
      });
      assert.equal(t.status, 200, JSON.stringify(t.body));
    });
  } finally {
    await smtp.close();
  }
});

Deno.test("POST /resend sms and phone_change: a new code for pending ones, the same answer otherwise", async () => {
  await withPhoneServer("twilio", { AUTHSVC_SMS_OTP_EXP: "600" }, async ({ srv, sms, clock }) => {
    const phone = "+15552220007";
    assert.equal((await postJson(srv, "/signup", { phone, password: PASSWORD })).status, 200);
    const first = sms.lastCode(phone);
    clock.advance(61);
    const r = await postJson(srv, "/resend", { type: "sms", phone });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.message_id);
    assert.equal(sms.messagesTo(phone).length, 2);
    if (first !== sms.lastCode(phone)) {
      const old = await postJson(srv, "/verify", { type: "sms", phone, token: first });
      assert.equal(old.status, 403, "a resent code replaces the previous one");
    }
    // An unknown number: the same answer, and the same 429 within SMS_MAX_FREQUENCY.
    const unknown = await postJson(srv, "/resend", { type: "sms", phone: "+15552229999" });
    assert.equal(unknown.status, 200);
    assert.deepEqual(Object.keys(unknown.body), ["message_id"]);
    assert.match(String(unknown.body.message_id), /^[0-9a-f-]{36}$/);
    assert.match(String(r.body.message_id), /^[0-9a-f-]{36}$/);
    const unknownAgain = await postJson(srv, "/resend", { type: "sms", phone: "+15552229999" });
    assert.equal(unknownAgain.status, 429);
    assert.equal(unknownAgain.body.error_code, "over_sms_send_rate_limit");
    const knownAgain = await postJson(srv, "/resend", { type: "sms", phone });
    assert.equal(knownAgain.status, 429);
    assert.equal(knownAgain.body.error_code, "over_sms_send_rate_limit");
    assert.equal(sms.messagesTo("+15552229999").length, 0);
    const v = await postJson(srv, "/verify", { type: "sms", phone, token: sms.lastCode(phone) });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    clock.advance(61);
    const confirmed = await postJson(srv, "/resend", { type: "sms", phone });
    assert.equal(confirmed.status, 200);
    assert.deepEqual(Object.keys(confirmed.body), ["message_id"]);
    assert.equal(sms.messagesTo(phone).length, 2);
    // a pending phone change gets its code again
    const token = String(v.body.access_token);
    const put = await call(srv, "PUT", "/user", { body: { phone: "+15552220008" }, token: token });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    clock.advance(61);
    const again = await postJson(srv, "/resend", { type: "phone_change", phone });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(sms.messagesTo("+15552220008").length, 2);
    const moved = await postJson(srv, "/verify", {
      type: "phone_change",
      phone: "+15552220008",
      token: sms.lastCode("+15552220008"),
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
  });
});

Deno.test("GET /reauthenticate by SMS for a phone-only user; the nonce allows the password change", async () => {
  await withPhoneServer("vonage", {
    AUTHSVC_SMS_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "true",
  }, async ({ srv, sms }) => {
    const phone = "+15552220009";
    const up = await postJson(srv, "/signup", { phone, password: PASSWORD });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const token = String(up.body.access_token);
    const re = await call(srv, "GET", "/reauthenticate", { token: token });
    assert.equal(re.status, 200, JSON.stringify(re.body));
    const nonce = sms.lastCode(phone);
    assert.match(nonce ?? "", /^\d{6}$/);
    const without = await call(srv, "PUT", "/user", {
      body: { password: "a new password 1" },
      token: token,
    });
    assert.equal(without.status, 400);
    const withNonce = await call(srv, "PUT", "/user", {
      body: { password: "a new password 1", nonce },
      token: token,
    });
    assert.equal(withNonce.status, 200, JSON.stringify(withNonce.body));
    const t = await postJson(srv, "/token?grant_type=password", {
      phone,
      password: "a new password 1",
    });
    assert.equal(t.status, 200, JSON.stringify(t.body));
  });
});

Deno.test("auth-js: signUp({ phone, password }) then verifyOtp, and resend through the client", async () => {
  await withPhoneServer("messagebird", { AUTHSVC_SMS_MAX_FREQUENCY: "0" }, async ({ srv, sms }) => {
    const client = authClient(srv);
    const phone = "+15552220010";
    const up = await client.signUp({ phone, password: PASSWORD });
    assert.equal(up.error, null, String(up.error?.message));
    assert.equal(up.data.session, null);
    const rs = await client.resend({ type: "sms", phone });
    assert.equal(rs.error, null, String(rs.error?.message));
    assert.equal(sms.messagesTo(phone).length, 2);
    const v = await client.verifyOtp({ phone, token: sms.lastCode(phone)!, type: "sms" });
    assert.equal(v.error, null, String(v.error?.message));
    const pw = await client.signInWithPassword({ phone, password: PASSWORD });
    assert.equal(pw.error, null, String(pw.error?.message));
    assert.equal(pw.data.user?.phone, "15552220010");
  });
});

Deno.test("auth-js: updateUser({ phone }) then verifyOtp phone_change; reauthenticate() by SMS then updateUser({ password, nonce })", async () => {
  await withPhoneServer("vonage", {
    AUTHSVC_SMS_MAX_FREQUENCY: "0",
    AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "true",
  }, async ({ srv, sms }) => {
    const client = authClient(srv);
    const phone = "+15552220011";
    assert.equal((await client.signInWithOtp({ phone })).error, null);
    const inn = await client.verifyOtp({ phone, token: sms.lastCode(phone)!, type: "sms" });
    assert.equal(inn.error, null, String(inn.error?.message));

    const next = "+15552220012";
    const upd = await client.updateUser({ phone: next });
    assert.equal(upd.error, null, String(upd.error?.message));
    assert.equal(upd.data.user?.phone, "15552220011", "the number changes only once confirmed");
    assert.ok((upd.data.user as unknown as { phone_change_sent_at?: string }).phone_change_sent_at);
    assert.equal(sms.messagesTo(next).length, 1);
    const moved = await client.verifyOtp({
      phone: next,
      token: sms.lastCode(next)!,
      type: "phone_change",
    });
    assert.equal(moved.error, null, String(moved.error?.message));
    assert.equal(moved.data.user?.phone, "15552220012");
    assert.equal((await client.getUser()).data.user?.phone, "15552220012");

    const refused = await client.updateUser({ password: "new phone password 2" });
    assert.equal(refused.error?.status, 400, "a password change needs the nonce");
    assert.equal((await client.reauthenticate()).error, null);
    const nonce = sms.lastCode(next)!;
    const changed = await client.updateUser({ password: "new phone password 2", nonce });
    assert.equal(changed.error, null, String(changed.error?.message));
    const again = await client.signInWithPassword({
      phone: next,
      password: "new phone password 2",
    });
    assert.equal(again.error, null, String(again.error?.message));
    assert.deepEqual(sms.violations, []);
  });
});

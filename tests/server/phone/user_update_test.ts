import assert from "node:assert/strict";
import { postJson } from "../../helpers/server.ts";
import { withPhoneServer } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

const PASSWORD = "correct horse battery";

async function signedIn(srv: Parameters<typeof postJson>[0], email: string): Promise<string> {
  const r = await postJson(srv, "/signup", { email, password: PASSWORD });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.body.access_token);
}

Deno.test("PUT /user with a new phone texts a code to the new number", async () => {
  await withPhoneServer("twilio", { AUTHSVC_MAILER_AUTOCONFIRM: "true" }, async ({ srv, sms }) => {
    const token = await signedIn(srv, "change@example.com");
    const r = await call(srv, "PUT", "/user", { body: { phone: "+1 555 777 0001" }, token: token });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.phone_change_sent_at);
    assert.equal(r.body.new_phone, "15557770001");
    assert.equal(r.body.phone, "");
    assert.match(sms.lastCode("15557770001") ?? "", /^\d{6}$/);
    const bad = await call(srv, "PUT", "/user", { body: { phone: "not a phone" }, token: token });
    assert.equal(bad.status, 422);
    assert.match(String(bad.body.msg), /phone/);
  });
});

Deno.test("PUT /user with a phone another user has: 422 phone_exists, no SMS", async () => {
  await withPhoneServer("vonage", {
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
  }, async ({ srv, sms }) => {
    const other = await postJson(srv, "/signup", { phone: "+15557770002", password: PASSWORD });
    assert.equal(other.status, 200);
    const token = await signedIn(srv, "taken@example.com");
    const r = await call(srv, "PUT", "/user", { body: { phone: "+15557770002" }, token: token });
    assert.equal(r.status, 422);
    assert.equal(r.body.error_code, "phone_exists");
    assert.equal(sms.messages.length, 0);
  });
});

Deno.test("PUT /user phone with SMS_AUTOCONFIRM changes the number at once", async () => {
  await withPhoneServer("messagebird", {
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
  }, async ({ srv, sms }) => {
    const token = await signedIn(srv, "auto@example.com");
    const r = await call(srv, "PUT", "/user", { body: { phone: "+15557770003" }, token: token });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.phone, "15557770003");
    assert.ok(r.body.phone_confirmed_at);
    const providers = (r.body.app_metadata as { providers: string[] }).providers;
    assert.deepEqual([...providers].sort(), ["email", "phone"]);
    assert.equal(sms.messages.length, 0);
    const t = await postJson(srv, "/token?grant_type=password", {
      phone: "+15557770003",
      password: PASSWORD,
    });
    assert.equal(t.status, 200, JSON.stringify(t.body));
  });
});

Deno.test("PUT /user phone while the gateway fails: error, and the user is unchanged", async () => {
  await withPhoneServer(
    "textlocal",
    { AUTHSVC_MAILER_AUTOCONFIRM: "true" },
    async ({ srv, sms }) => {
      const token = await signedIn(srv, "fail@example.com");
      sms.failWith("auth");
      const r = await call(srv, "PUT", "/user", { body: { phone: "+15557770004" }, token: token });
      assert.equal(r.status, 422);
      assert.equal(r.body.error_code, "sms_send_failed");
      assert.match(String(r.body.msg), /Invalid login details/);
      const me = await call(srv, "GET", "/user", { token: token });
      assert.equal(me.body.new_phone, undefined);
      assert.equal(me.body.phone_change_sent_at, undefined);
    },
  );
});

Deno.test("an anonymous user who confirms a phone becomes a permanent phone user", async () => {
  await withPhoneServer("vonage", {
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  }, async ({ srv, sms }) => {
    const anon = await postJson(srv, "/signup", {});
    assert.equal(anon.status, 200, JSON.stringify(anon.body));
    const token = String(anon.body.access_token);
    const put = await call(srv, "PUT", "/user", { body: { phone: "+15557770005" }, token: token });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.is_anonymous, true);
    const v = await postJson(srv, "/verify", {
      type: "phone_change",
      phone: "+15557770005",
      token: sms.lastCode("15557770005"),
    });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    const user = v.body.user as Record<string, unknown>;
    assert.equal(user.is_anonymous, false);
    assert.equal(user.phone, "15557770005");
    assert.ok((user.app_metadata as { providers: string[] }).providers.includes("phone"));
  });
});

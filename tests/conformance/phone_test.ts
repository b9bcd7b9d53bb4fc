/** Cases ported from supabase/auth internal/api/phone_test.go, through the HTTP API. */
import { assert, assertError, conformance, ported } from "./_helpers.ts";

conformance("phone_test.go", {}, [
  ported("TestValidateE164Format", async (e) => {
    const r = await e.call("POST", "/signup", { phone: "0123456789", password: "testpassword" });
    assertError(r, 422, "validation_failed");
    assert.match(r.body.msg, /Invalid phone number format \(E\.164 required\)/);
  }),
  ported("TestFormatPhoneNumber", async (e) => {
    const digits = e.phone().slice(1);
    const spaced = `+${digits.slice(0, 1)} ${digits.slice(1)} `;
    const r = await e.call("POST", "/signup", { phone: spaced, password: "testpassword" });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.phone, digits);
  }),
  ported("TestSendPhoneConfirmation/send confirmation otp", async (e) => {
    const phone = e.phone();
    const r = await e.call("POST", "/signup", { phone, password: "testpassword" });
    assert.equal(r.status, 200, r.text);
    assert.equal(e.sms!.messagesTo(phone).length, 1);
    assert.ok(r.body.confirmation_sent_at);
  }),
  ported("TestSendPhoneConfirmation/send phone_change otp", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    const r = await e.call("PUT", "/user", { phone }, s.access_token);
    assert.equal(r.status, 200, r.text);
    assert.equal(e.sms!.messagesTo(phone).length, 1);
    assert.ok(r.body.phone_change_sent_at);
  }),
  ported("TestSendPhoneConfirmation/send recovery otp (reauthentication)", async (e) => {
    const phone = e.phone();
    await e.user({ phone });
    const s = await e.signIn({ phone });
    const r = await e.call("GET", "/reauthenticate", undefined, s.access_token);
    assert.equal(r.status, 200, r.text);
    assert.equal(e.sms!.messagesTo(phone).length, 1);
    const me = await e.call("GET", "/user", undefined, s.access_token);
    assert.ok(me.body.reauthentication_sent_at);
  }),
], { sms: true });

// Phone sign-ups on, but no SMS gateway configured: every path that would send a code fails
// with a 500 that says so, and nothing is half done.
conformance("phone_test.go", { AUTHSVC_EXTERNAL_PHONE_ENABLED: "true", AUTHSVC_SMS_PROVIDER: "" }, [
  ported("TestMissingSmsProviderConfig/Signup", async (e) => {
    const phone = e.phone();
    const r = await e.call("POST", "/signup", { phone, password: "testpassword" });
    assertError(r, 500);
    assert.match(r.body.msg, /SMS provider/);
    assert.equal(await e.srv.services.users.findByPhone(phone.slice(1)), null);
  }),
  ported("TestMissingSmsProviderConfig/Sms OTP", async (e) => {
    const phone = e.phone();
    await e.user({ phone });
    const r = await e.call("POST", "/otp", { phone });
    assertError(r, 500);
    assert.match(r.body.msg, /SMS provider/);
  }),
  ported("TestMissingSmsProviderConfig/Phone change", async (e) => {
    const s = await e.session();
    const r = await e.call("PUT", "/user", { phone: e.phone() }, s.access_token);
    assertError(r, 500);
    assert.match(r.body.msg, /SMS provider/);
    const me = await e.call("GET", "/user", undefined, s.access_token);
    assert.ok(!me.body.new_phone, me.text);
  }),
  ported("TestMissingSmsProviderConfig/Reauthenticate", async (e) => {
    const phone = e.phone();
    await e.user({ phone });
    const s = await e.signIn({ phone });
    const r = await e.call("GET", "/reauthenticate", undefined, s.access_token);
    assertError(r, 500);
    assert.match(r.body.msg, /SMS provider/);
  }),
]);

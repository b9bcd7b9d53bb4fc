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

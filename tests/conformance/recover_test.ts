/** Cases ported from supabase/auth internal/api/recover_test.go (SMTP_LINK_FREQUENCY 60 s as upstream). */
import { assert, assertError, conformance, ported } from "./_helpers.ts";

conformance("recover_test.go", { AUTHSVC_SMTP_LINK_FREQUENCY: "60s" }, [
  ported("TestRecover_FirstRecovery", async (e) => {
    const u = await e.user();
    const r = await e.call("POST", "/recover", { email: u.email });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {});
    const mail = await e.smtp.waitForMail(u.email);
    assert.match(mail.subject, /Reset Your Password/);
    const row = await e.srv.services.users.findByEmail(u.email);
    assert.ok(Math.abs(row!.recovery_sent_at!.getTime() - e.clock.now().getTime()) < 1000);
  }),
  ported("TestRecover_NoEmailSent", async (e) => {
    const u = await e.user();
    assert.equal((await e.call("POST", "/recover", { email: u.email })).status, 200);
    await e.smtp.waitForMail(u.email);
    const sentAt = (await e.srv.services.users.findByEmail(u.email))!.recovery_sent_at;
    e.clock.advance(59);
    const r = await e.call("POST", "/recover", { email: u.email });
    assertError(r, 429, "over_email_send_rate_limit");
    const row = await e.srv.services.users.findByEmail(u.email);
    assert.equal(row!.recovery_sent_at!.getTime(), sentAt!.getTime());
    assert.equal(e.smtp.count(u.email), 1);
  }),
  ported("TestRecover_NewEmailSent", async (e) => {
    const u = await e.user();
    assert.equal((await e.call("POST", "/recover", { email: u.email })).status, 200);
    await e.smtp.waitForMail(u.email);
    e.clock.advance(20 * 60);
    const r = await e.call("POST", "/recover", { email: u.email });
    assert.equal(r.status, 200, r.text);
    await e.smtp.waitForMail(u.email);
    const row = await e.srv.services.users.findByEmail(u.email);
    assert.equal(row!.recovery_sent_at!.getTime(), e.clock.now().getTime());
  }),
  ported("TestRecover_NoSideChannelLeak", async (e) => {
    const r = await e.call("POST", "/recover", { email: e.email("doesntexist") });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {});
  }),
]);

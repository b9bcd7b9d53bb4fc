import assert from "node:assert/strict";
import { startSmsFake } from "../../helpers/sms_fakes.ts";
import { startTestServer } from "../../helpers/server.ts";
import { accessToken, api, claims, MFA_ENV, signedUp, TestClock } from "./_helpers.ts";

Deno.test("a phone factor through auth-js: the code arrives by SMS and raises the session to aal2", async () => {
  const sms = await startSmsFake("twilio");
  const clock = new TestClock();
  const srv = await startTestServer({
    ...MFA_ENV,
    ...sms.env,
    AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true",
    AUTHSVC_SMS_MAX_FREQUENCY: "60",
    LOG_LEVEL: "debug",
  }, { clock });
  try {
    const { client } = await signedUp(srv);
    const enrolled = await client.mfa.enroll({
      factorType: "phone",
      phone: "+1 555 010 4477",
      friendlyName: "my phone",
    });
    assert.equal(enrolled.error, null, enrolled.error?.message ?? "");
    const f = enrolled.data!;
    assert.equal(f.type, "phone");
    assert.equal((f as { phone: string }).phone, "15550104477");
    assert.equal(sms.messages.length, 0, "enrolling sends nothing");

    const ch = await client.mfa.challenge({ factorId: f.id });
    assert.equal(ch.error, null, ch.error?.message ?? "");
    assert.equal(sms.messagesTo("+15550104477").length, 1);
    const code = sms.lastCode("+15550104477")!;
    assert.match(code, /^\d{6}$/);

    // Another challenge within SMS_MAX_FREQUENCY is refused; no second SMS.
    const tooSoon = await client.mfa.challenge({ factorId: f.id });
    assert.equal(tooSoon.error?.status, 429);
    assert.equal(tooSoon.error?.code, "over_sms_send_rate_limit");
    assert.equal(sms.messagesTo("+15550104477").length, 1);

    const wrong = await client.mfa.verify({
      factorId: f.id,
      challengeId: ch.data!.id,
      code: code === "000000" ? "111111" : "000000",
    });
    assert.equal(wrong.error?.code, "mfa_verification_failed");

    const ok = await client.mfa.verify({ factorId: f.id, challengeId: ch.data!.id, code });
    assert.equal(ok.error, null, ok.error?.message ?? "");
    const c = claims(ok.data!.access_token);
    assert.equal(c.aal, "aal2");
    assert.deepEqual((c.amr as { method: string }[]).map((e) => e.method), [
      "mfa/phone",
      "password",
    ]);
    const list = await client.mfa.listFactors();
    assert.deepEqual(list.data!.phone.map((x) => x.id), [f.id]);

    // The code is no longer usable, and the factor's number cannot be enrolled twice.
    const again = await client.mfa.verify({ factorId: f.id, challengeId: ch.data!.id, code });
    assert.equal(again.error?.code, "mfa_challenge_expired");
    const dup = await api(srv, "POST", "/factors", await accessToken(client), {
      factor_type: "phone",
      phone: "+15550104477",
    });
    assert.equal(dup.status, 422);
    assert.equal(dup.body.error_code, "mfa_verified_factor_exists");

    // After the interval a new code goes out.
    clock.advance(61);
    const next = await client.mfa.challenge({ factorId: f.id });
    assert.equal(next.error, null, next.error?.message ?? "");
    assert.equal(sms.messagesTo("+15550104477").length, 2);
    assert.notEqual(sms.lastCode("+15550104477"), undefined);
    assert.deepEqual(sms.violations, []);
    assert.ok(srv.logs.some((l) => l.includes("sms sent")), "debug logging captured the sends");
    const standalone = new RegExp(`(?<![0-9])${code}(?![0-9])`);
    assert.ok(!srv.logs.some((l) => standalone.test(l)), "codes never reach a log");
  } finally {
    await srv.close();
    await sms.close();
  }
});

Deno.test("a phone challenge whose SMS fails creates no challenge and says why", async () => {
  const sms = await startSmsFake("vonage");
  const srv = await startTestServer({
    ...MFA_ENV,
    ...sms.env,
    AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true",
  });
  try {
    const { client } = await signedUp(srv);
    const f = (await client.mfa.enroll({ factorType: "phone", phone: "+4915112345678" })).data!;
    sms.failWith("recipient", 1);
    const failed = await client.mfa.challenge({ factorId: f.id });
    assert.equal(failed.error?.status, 422);
    assert.equal(failed.error?.code, "sms_send_failed");
    // The failure counted nothing: the next challenge goes out at once.
    const ok = await client.mfa.challenge({ factorId: f.id });
    assert.equal(ok.error, null, ok.error?.message ?? "");
    assert.equal(sms.messagesTo("+4915112345678").length, 1);
  } finally {
    await srv.close();
    await sms.close();
  }
});

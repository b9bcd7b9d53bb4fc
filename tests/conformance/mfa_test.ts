/** Cases ported from supabase/auth internal/api/mfa_test.go (TOTP and phone factors). */
import {
  assert,
  assertError,
  claims,
  conformance,
  type Env,
  ported,
  totpAt,
  totpFactor,
} from "./_helpers.ts";

const ENV = {
  AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true",
  AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_ENROLLED_ENABLED: "true",
  AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_UNENROLLED_ENABLED: "true",
};

async function enroll(e: Env, token: string, body: Record<string, unknown>) {
  return await e.call("POST", "/factors", body, token);
}

async function factorsOf(e: Env, token: string) {
  return (await e.call("GET", "/user", undefined, token)).body.factors ?? [];
}

/** Enrolls and verifies a phone factor: its id, the AAL2 session. */
async function phoneFactor(e: Env, s: { access_token: string }, phone: string) {
  const f = await enroll(e, s.access_token, { factor_type: "phone", phone });
  assert.equal(f.status, 200, f.text);
  const ch = await e.call("POST", `/factors/${f.body.id}/challenge`, {}, s.access_token);
  assert.equal(ch.status, 200, ch.text);
  const v = await e.call("POST", `/factors/${f.body.id}/verify`, {
    challenge_id: ch.body.id,
    code: e.sms!.lastCode(phone),
  }, s.access_token);
  assert.equal(v.status, 200, v.text);
  return { id: f.body.id as string, aal2: v.body };
}

conformance("mfa_test.go", ENV, [
  ported("TestEnrollFactor/TOTP: No issuer", async (e) => {
    const s = await e.session();
    const r = await enroll(e, s.access_token, { factor_type: "totp", friendly_name: "alt" });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.totp.secret);
    assert.match(r.body.totp.uri, /^otpauth:\/\/totp\//);
  }),
  ported("TestEnrollFactor/Invalid factor type", async (e) => {
    const s = await e.session();
    const r = await enroll(e, s.access_token, {
      factor_type: "invalid_factor",
      friendly_name: "x",
    });
    assertError(r, 400, "validation_failed");
  }),
  ported("TestEnrollFactor/TOTP: Factor has friendly name", async (e) => {
    const s = await e.session();
    const r = await enroll(e, s.access_token, {
      factor_type: "totp",
      friendly_name: "john",
      issuer: "https://issuer.com",
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.friendly_name, "john");
    assert.match(decodeURIComponent(r.body.totp.uri), /issuer=https:\/\/issuer\.com/);
  }),
  ported("TestEnrollFactor/TOTP: Enrolling without friendly name", async (e) => {
    const s = await e.session();
    const r = await enroll(e, s.access_token, { factor_type: "totp", issuer: "issuer.com" });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.friendly_name ?? "", "");
  }),
  ported("TestEnrollFactor/Phone: Enroll with friendly name", async (e) => {
    const s = await e.session();
    const r = await enroll(e, s.access_token, {
      factor_type: "phone",
      friendly_name: "phone_factor",
      phone: e.phone(),
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.friendly_name, "phone_factor");
  }),
  ported("TestEnrollFactor/Phone: Enroll with invalid phone number", async (e) => {
    const s = await e.session();
    const r = await enroll(e, s.access_token, { factor_type: "phone", phone: "+1" });
    assertError(r, 400, "validation_failed");
  }),
  ported("TestEnrollFactor/Phone: Enroll without phone number should return error", async (e) => {
    const s = await e.session();
    const r = await enroll(e, s.access_token, { factor_type: "phone", phone: "" });
    assertError(r, 400, "validation_failed");
  }),
  ported(
    "TestDuplicateEnrollPhoneFactor/Phone: Only the latest factor should persist when enrolling two unverified phone factors with the same number",
    async (e) => {
      const s = await e.session();
      const phone = e.phone();
      assert.equal(
        (await enroll(e, s.access_token, { factor_type: "phone", phone, friendly_name: "a" }))
          .status,
        200,
      );
      const later = await enroll(e, s.access_token, {
        factor_type: "phone",
        phone,
        friendly_name: "b",
      });
      assert.equal(later.status, 200, later.text);
      const fs = await factorsOf(e, s.access_token);
      assert.equal(fs.length, 1);
      assert.equal(fs[0].id, later.body.id);
      assert.equal(fs[0].status, "unverified");
    },
  ),
  ported(
    "TestDuplicateEnrollPhoneFactor/Phone: Both factors should persist when enrolling two different unverified numbers",
    async (e) => {
      const s = await e.session();
      assert.equal(
        (await enroll(e, s.access_token, {
          factor_type: "phone",
          phone: e.phone(),
          friendly_name: "a",
        })).status,
        200,
      );
      assert.equal(
        (await enroll(e, s.access_token, {
          factor_type: "phone",
          phone: e.phone(),
          friendly_name: "b",
        })).status,
        200,
      );
      assert.equal((await factorsOf(e, s.access_token)).length, 2);
    },
  ),
  ported("TestDuplicateEnrollPhoneFactorWithVerified", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    const { aal2 } = await phoneFactor(e, s, phone);
    const again = await enroll(e, aal2.access_token, {
      factor_type: "phone",
      phone,
      friendly_name: "alt",
    });
    assert.equal(again.status, 422, again.text);
    assert.equal((await factorsOf(e, aal2.access_token)).length, 1);
  }),
  ported("TestDuplicateTOTPEnrollsReturnExpectedMessage", async (e) => {
    const s = await e.session();
    const body = { factor_type: "totp", friendly_name: "mary", issuer: "https://issuer.com" };
    assert.equal((await enroll(e, s.access_token, body)).status, 200);
    assertError(await enroll(e, s.access_token, body), 422, "mfa_factor_name_conflict");
  }),
  ported("TestChallengeTOTPFactor", async (e) => {
    const s = await e.session();
    const f = await enroll(e, s.access_token, { factor_type: "totp" });
    const ch = await e.call("POST", `/factors/${f.body.id}/challenge`, {}, s.access_token);
    assert.equal(ch.status, 200, ch.text);
    assert.equal(ch.body.type, "totp");
    assert.ok(ch.body.id);
  }),
  ported("TestChallengeSMSFactor/SMS Channel", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    const f = await enroll(e, s.access_token, { factor_type: "phone", phone });
    const ch = await e.call(
      "POST",
      `/factors/${f.body.id}/challenge`,
      { channel: "sms" },
      s.access_token,
    );
    assert.equal(ch.status, 200, ch.text);
    assert.match(e.sms!.lastCode(phone) ?? "", /^\d{6}$/);
  }),
  ported("TestMFAVerifyFactor/Invalid: Valid code and expired challenge", async (e) => {
    const s = await e.session();
    const f = await enroll(e, s.access_token, { factor_type: "totp" });
    const ch = await e.call("POST", `/factors/${f.body.id}/challenge`, {}, s.access_token);
    e.clock.advance(3600);
    try {
      const v = await e.call("POST", `/factors/${f.body.id}/verify`, {
        challenge_id: ch.body.id,
        code: totpAt(f.body.totp.secret, e.clock.now().getTime()),
      }, s.access_token);
      assertError(v, 422, "mfa_challenge_expired");
    } finally {
      e.clock.advance(-3600);
    }
  }),
  ported("TestMFAVerifyFactor/Invalid: Invalid code and valid challenge", async (e) => {
    const s = await e.session();
    const f = await enroll(e, s.access_token, { factor_type: "totp" });
    const ch = await e.call("POST", `/factors/${f.body.id}/challenge`, {}, s.access_token);
    const good = totpAt(f.body.totp.secret, e.clock.now().getTime());
    const v = await e.call("POST", `/factors/${f.body.id}/verify`, {
      challenge_id: ch.body.id,
      code: good === "000000" ? "111111" : "000000",
    }, s.access_token);
    assertError(v, 422, "mfa_verification_failed");
  }),
  ported("TestMFAVerifyFactor/Valid /verify request", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s);
    assert.equal(claims(f.aal2.access_token).aal, "aal2");
  }),
  ported("TestMFAVerifyFactor/Invalid: Valid code and expired challenge (SMS)", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    const f = await enroll(e, s.access_token, { factor_type: "phone", phone });
    const ch = await e.call("POST", `/factors/${f.body.id}/challenge`, {}, s.access_token);
    e.clock.advance(3600);
    try {
      const v = await e.call("POST", `/factors/${f.body.id}/verify`, {
        challenge_id: ch.body.id,
        code: e.sms!.lastCode(phone),
      }, s.access_token);
      assertError(v, 422, "mfa_challenge_expired");
    } finally {
      e.clock.advance(-3600);
    }
  }),
  ported("TestMFAVerifyFactor/Invalid: Invalid code and valid challenge (SMS)", async (e) => {
    const s = await e.session();
    const phone = e.phone();
    const f = await enroll(e, s.access_token, { factor_type: "phone", phone });
    const ch = await e.call("POST", `/factors/${f.body.id}/challenge`, {}, s.access_token);
    const code = e.sms!.lastCode(phone);
    const v = await e.call("POST", `/factors/${f.body.id}/verify`, {
      challenge_id: ch.body.id,
      code: code === "000000" ? "111111" : "000000",
    }, s.access_token);
    assertError(v, 422, "mfa_verification_failed");
  }),
  ported("TestMFAVerifyFactor/Valid /verify request (SMS)", async (e) => {
    const s = await e.session();
    const { aal2 } = await phoneFactor(e, s, e.phone());
    assert.equal(claims(aal2.access_token).aal, "aal2");
  }),
  ported("TestUnenrollVerifiedFactor/Verified Factor: AAL1", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s);
    const aal1 = await e.signIn({ email: s.user.email });
    const r = await e.call("DELETE", `/factors/${f.id}`, undefined, aal1.access_token);
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.error_code, "insufficient_aal");
  }),
  ported("TestUnenrollVerifiedFactor/Verified Factor: AAL2, Success", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s);
    const r = await e.call("DELETE", `/factors/${f.id}`, undefined, f.aal2.access_token);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, f.id);
  }),
  ported("TestUnenrollUnverifiedFactor", async (e) => {
    const s = await e.session();
    const f = await enroll(e, s.access_token, { factor_type: "totp" });
    const r = await e.call("DELETE", `/factors/${f.body.id}`, undefined, s.access_token);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(await factorsOf(e, s.access_token), []);
  }),
  ported("TestSessionsMaintainAALOnRefresh", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s);
    const r = await e.call("POST", "/token?grant_type=refresh_token", {
      refresh_token: f.aal2.refresh_token,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(claims(r.body.access_token).aal, "aal2");
  }),
  ported("TestMFAFollowedByPasswordSignIn", async (e) => {
    const s = await e.session();
    await totpFactor(e, s);
    const again = await e.signIn({ email: s.user.email });
    const c = claims(again.access_token);
    assert.equal(c.aal, "aal1");
    assert.ok(c.amr.some((a: { method: string }) => a.method === "password"));
  }),
  ported("TestChallengeFactorNotOwnedByUser", async (e) => {
    const a = await e.session();
    const f = await enroll(e, a.access_token, { factor_type: "totp" });
    const b = await e.session();
    const r = await e.call("POST", `/factors/${f.body.id}/challenge`, {}, b.access_token);
    assertError(r, 404, "mfa_factor_not_found");
    assert.equal(r.body.msg, "Factor not found");
  }),
  ported("TestMFAFactorEnrolledNotificationEnabled", async (e) => {
    const s = await e.session();
    await totpFactor(e, s);
    const mail = await e.smtp.waitForMail(s.user.email);
    assert.match(mail.subject, /A new MFA factor has been enrolled/);
  }),
  ported("TestMFAFactorUnenrolledNotificationEnabled", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s);
    await e.smtp.waitForMail(s.user.email); // the enrolled notice
    const r = await e.call("DELETE", `/factors/${f.id}`, undefined, f.aal2.access_token);
    assert.equal(r.status, 200, r.text);
    const mail = await e.smtp.waitForMail(s.user.email);
    assert.match(mail.subject, /An MFA factor has been unenrolled/);
    const after = await e.call("POST", "/token?grant_type=refresh_token", {
      refresh_token: f.aal2.refresh_token,
    });
    assert.equal(claims(after.body.access_token).aal, "aal1");
  }),
], { sms: true });

conformance("mfa_test.go", {}, [
  ported("TestMFAFactorEnrolledNotificationDisabled", async (e) => {
    const s = await e.session();
    await totpFactor(e, s);
    assert.equal((await e.call("POST", "/recover", { email: s.user.email })).status, 200);
    const next = await e.smtp.waitForMail(s.user.email);
    assert.match(next.subject, /Reset Your Password/);
  }),
  ported("TestMFAFactorUnenrolledNotificationDisabled", async (e) => {
    const s = await e.session();
    const f = await totpFactor(e, s);
    const r = await e.call("DELETE", `/factors/${f.id}`, undefined, f.aal2.access_token);
    assert.equal(r.status, 200, r.text);
    assert.equal((await e.call("POST", "/recover", { email: s.user.email })).status, 200);
    const next = await e.smtp.waitForMail(s.user.email);
    assert.match(next.subject, /Reset Your Password/);
  }),
]);

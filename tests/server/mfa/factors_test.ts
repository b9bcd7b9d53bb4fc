import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import {
  accessToken,
  admin,
  api,
  claims,
  MFA_ENV,
  signedIn,
  signedUp,
  TestClock,
  totpAt,
} from "./_helpers.ts";

Deno.test("the whole TOTP cycle through @supabase/auth-js: enroll, challenge, verify, aal2, unenroll, admin", async () => {
  const clock = new TestClock();
  // Debug logging: every line the server can write is captured and searched for the secret.
  const srv = await startTestServer({ ...MFA_ENV, LOG_LEVEL: "debug" }, { clock });
  try {
    const { client: phoneA, email, userId } = await signedUp(srv);

    // Before any factor: aal1 and nothing more to reach.
    let aal = await phoneA.mfa.getAuthenticatorAssuranceLevel();
    assert.deepEqual([aal.data?.currentLevel, aal.data?.nextLevel], ["aal1", "aal1"]);

    const enrolled = await phoneA.mfa.enroll({ factorType: "totp", friendlyName: "phone app" });
    assert.equal(enrolled.error, null);
    const f = enrolled.data!;
    assert.equal(f.type, "totp");
    assert.equal(f.friendly_name, "phone app");
    assert.match(f.totp.secret, /^[A-Z2-7]{32}$/);
    assert.ok(
      f.totp.qr_code.startsWith("data:image/svg+xml;utf-8,<svg "),
      f.totp.qr_code.slice(0, 40),
    );
    const uri = new URL(f.totp.uri);
    assert.equal(uri.searchParams.get("secret"), f.totp.secret);
    assert.equal(
      uri.searchParams.get("issuer"),
      "localhost:3000",
      "issuer defaults to SITE_URL's host",
    );
    assert.equal(decodeURIComponent(uri.pathname.slice(1)), `localhost:3000:${email}`);

    // Listed but not yet verified: auth-js buckets only verified factors by type.
    let list = await phoneA.mfa.listFactors();
    assert.deepEqual(list.data!.all.map((x) => [x.id, x.status]), [[f.id, "unverified"]]);
    assert.equal(list.data!.totp.length, 0);

    const challenge = await phoneA.mfa.challenge({ factorId: f.id });
    assert.equal(challenge.error, null);
    const expiresAt = (challenge.data as { expires_at: number }).expires_at;
    assert.equal(expiresAt, Math.floor(clock.ms / 1000) + 300);

    const verified = await phoneA.mfa.verify({
      factorId: f.id,
      challengeId: challenge.data!.id,
      code: totpAt(f.totp.secret, clock.ms),
    });
    assert.equal(verified.error, null, verified.error?.message ?? "");
    const stepped = claims(verified.data!.access_token);
    assert.equal(stepped.aal, "aal2");
    const amr = stepped.amr as { method: string; timestamp: number }[];
    assert.deepEqual(amr.map((e) => e.method), ["totp", "password"]);
    assert.equal(amr[0].timestamp, Math.floor(clock.ms / 1000));
    assert.equal(stepped.session_id, claims(verified.data!.access_token).session_id);

    aal = await phoneA.mfa.getAuthenticatorAssuranceLevel();
    assert.deepEqual([aal.data?.currentLevel, aal.data?.nextLevel], ["aal2", "aal2"]);
    list = await phoneA.mfa.listFactors();
    assert.deepEqual(list.data!.totp.map((x) => [x.id, x.status]), [[f.id, "verified"]]);

    // Refreshing keeps aal2 and the amr.
    const refreshed = await phoneA.refreshSession();
    assert.equal(refreshed.error, null);
    const after = claims(refreshed.data.session!.access_token);
    assert.equal(after.aal, "aal2");
    assert.deepEqual(after.amr, stepped.amr);

    // The secret is never shown again: not by GET /user, not by the admin API, not in logs.
    const me = await api(srv, "GET", "/user", await accessToken(phoneA));
    assert.equal(me.status, 200);
    assert.ok(!JSON.stringify(me.body).includes(f.totp.secret));
    assert.deepEqual(
      Object.keys((me.body.factors as object[])[0]).sort(),
      [
        "created_at",
        "factor_type",
        "friendly_name",
        "id",
        "status",
        "updated_at",
        "last_challenged_at",
      ]
        .sort(),
    );

    // A second device signs in with the password: aal1, with aal2 to reach.
    const phoneB = await signedIn(srv, email);
    aal = await phoneB.mfa.getAuthenticatorAssuranceLevel();
    assert.deepEqual([aal.data?.currentLevel, aal.data?.nextLevel], ["aal1", "aal2"]);
    // At aal1 it can neither remove the factor nor add one.
    const refusedDelete = await phoneB.mfa.unenroll({ factorId: f.id });
    assert.equal(refusedDelete.error?.status, 422); // GoTrue's status
    assert.equal(refusedDelete.error?.code, "insufficient_aal");
    const refusedEnroll = await phoneB.mfa.enroll({ factorType: "totp", friendlyName: "other" });
    assert.equal(refusedEnroll.error?.code, "insufficient_aal");

    // It steps up with the next code (the previous one was used).
    clock.advance(30);
    const b = await phoneB.mfa.challengeAndVerify({
      factorId: f.id,
      code: totpAt(f.totp.secret, clock.ms),
    });
    assert.equal(b.error, null, b.error?.message ?? "");
    aal = await phoneB.mfa.getAuthenticatorAssuranceLevel();
    assert.equal(aal.data?.currentLevel, "aal2");

    // Admin: list and delete.
    const adm = await admin(srv);
    const listed = await adm.mfa.listFactors({ userId });
    assert.equal(listed.error, null);
    assert.deepEqual(listed.data!.factors.map((x) => x.id), [f.id]);
    assert.ok(!JSON.stringify(listed.data).includes(f.totp.secret));
    const deleted = await adm.mfa.deleteFactor({ userId, id: f.id });
    assert.equal(deleted.error, null);
    assert.equal((await adm.mfa.listFactors({ userId })).data!.factors.length, 0);
    const again = await adm.mfa.deleteFactor({ userId, id: f.id });
    assert.equal(again.error?.status, 404);

    // Sessions raised with the deleted factor fall back to aal1 at their next refresh.
    const down = await phoneB.refreshSession();
    assert.equal(claims(down.data.session!.access_token).aal, "aal1");
    assert.deepEqual(
      (claims(down.data.session!.access_token).amr as { method: string }[]).map((e) => e.method),
      ["password"],
    );
    aal = await phoneB.mfa.getAuthenticatorAssuranceLevel();
    assert.deepEqual([aal.data?.currentLevel, aal.data?.nextLevel], ["aal1", "aal1"]);

    assert.ok(srv.logs.length > 10, "debug logging captured the requests");
    assert.ok(!srv.logs.some((l) => l.includes(f.totp.secret)), "the secret never reaches a log");
  } finally {
    await srv.close();
  }
});

Deno.test("unenroll through auth-js at aal2; an unverified factor can go at aal1 while none is verified", async () => {
  const clock = new TestClock();
  const srv = await startTestServer(MFA_ENV, { clock });
  try {
    const { client: c } = await signedUp(srv);
    const a = (await c.mfa.enroll({ factorType: "totp", friendlyName: "a" })).data!;
    const b = (await c.mfa.enroll({ factorType: "totp", friendlyName: "b" })).data!;
    assert.equal((await c.mfa.unenroll({ factorId: b.id })).error, null);
    assert.deepEqual((await c.mfa.listFactors()).data!.all.map((x) => x.id), [a.id]);

    const ok = await c.mfa.challengeAndVerify({
      factorId: a.id,
      code: totpAt(a.totp.secret, clock.ms),
    });
    assert.equal(ok.error, null);
    const gone = await c.mfa.unenroll({ factorId: a.id });
    assert.equal(gone.error, null);
    assert.deepEqual(gone.data, { id: a.id });
    assert.equal((await c.mfa.listFactors()).data!.all.length, 0);
    // The session that was raised with it is aal1 again after a refresh.
    const r = await c.refreshSession();
    assert.equal(claims(r.data.session!.access_token).aal, "aal1");
  } finally {
    await srv.close();
  }
});

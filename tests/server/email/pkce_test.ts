import assert from "node:assert/strict";
import { authJsClient } from "../../helpers/auth_js.ts";
import type { TestServer } from "../../helpers/server.ts";
import { sha256Base64url } from "../../../server/util/crypto.ts";
import { createFlowState } from "../../../server/auth/pkce.ts";
import type { Clock } from "../../../server/auth/clock.ts";
import { fragment, local, openLink, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

function client(srv: TestServer, flowType: "pkce" | "implicit") {
  return authJsClient(srv.url, flowType);
}

Deno.test("auth-js (pkce): sign-up + confirm, magic link and recovery land with ?code= and exchange", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const auth = client(srv, "pkce");
    const su = await auth.signUp({
      email: "pk@example.com",
      password: "pw-123456",
      options: { emailRedirectTo: "http://localhost:3000/cb" },
    });
    assert.equal(su.error, null);
    assert.equal(su.data.session, null);
    const mail = await smtp.waitForMail("pk@example.com");
    const { location } = await openLink(local(srv, mail.link));
    assert.equal(location!.pathname, "/cb");
    assert.equal(location!.hash, "");
    const code = location!.searchParams.get("code")!;
    assert.ok(code);
    const ex = await auth.exchangeCodeForSession(code);
    assert.equal(ex.error, null);
    assert.equal(ex.data.user?.email, "pk@example.com");
    assert.ok(ex.data.user?.email_confirmed_at);
    assert.ok(ex.data.session?.access_token);
    // the code is single use
    const again = await client(srv, "pkce").exchangeCodeForSession(code);
    assert.ok(again.error);
    await auth.signOut();

    const otp = await auth.signInWithOtp({
      email: "pk@example.com",
      options: { shouldCreateUser: false },
    });
    assert.equal(otp.error, null);
    const ml = await smtp.waitForMail("pk@example.com", { subject: "Your Magic Link" });
    const mlLoc = (await openLink(local(srv, ml.link))).location!;
    const mlEx = await auth.exchangeCodeForSession(mlLoc.searchParams.get("code")!);
    assert.equal(mlEx.error, null);
    assert.equal(mlEx.data.user?.email, "pk@example.com");
    await auth.signOut();

    const rec = await auth.resetPasswordForEmail("pk@example.com", {
      redirectTo: "http://localhost:3000/reset",
    });
    assert.equal(rec.error, null);
    const rm = await smtp.waitForMail("pk@example.com", { subject: "Reset Your Password" });
    const rLoc = (await openLink(local(srv, rm.link))).location!;
    assert.equal(rLoc.pathname, "/reset");
    const rEx = await auth.exchangeCodeForSession(rLoc.searchParams.get("code")!);
    assert.equal(rEx.error, null);
    const up = await auth.updateUser({ password: "new-pw-789" });
    assert.equal(up.error, null);
    const si = await auth.signInWithPassword({ email: "pk@example.com", password: "new-pw-789" });
    assert.equal(si.error, null);
    await auth.signOut();
  });
});

Deno.test("auth-js (implicit): verifyOtp with the typed code and with token_hash; resend", async () => {
  await withEmail(
    { AUTHSVC_SMTP_MAX_FREQUENCY: "0", AUTHSVC_SMTP_LINK_FREQUENCY: "0" },
    async ({ srv, smtp }) => {
      const auth = client(srv, "implicit");
      const su = await auth.signUp({ email: "imp@example.com", password: "pw-123456" });
      assert.equal(su.error, null);
      await smtp.waitForMail("imp@example.com");
      const rs = await auth.resend({ type: "signup", email: "imp@example.com" });
      assert.equal(rs.error, null);
      const mail = await smtp.waitForMail("imp@example.com");
      const v = await auth.verifyOtp({
        email: "imp@example.com",
        token: mail.code,
        type: "signup",
      });
      assert.equal(v.error, null);
      assert.equal(v.data.user?.email, "imp@example.com");
      await auth.signOut();

      assert.equal((await auth.signInWithOtp({ email: "imp@example.com" })).error, null);
      const ml = await smtp.waitForMail("imp@example.com");
      const tokenHash = new URL(ml.link).searchParams.get("token")!;
      const th = await auth.verifyOtp({ token_hash: tokenHash, type: "magiclink" });
      assert.equal(th.error, null);
      assert.ok(th.data.session?.access_token);
      await auth.signOut();

      await auth.signInWithOtp({ email: "imp@example.com" });
      const code = (await smtp.waitForMail("imp@example.com")).code;
      const wrong = await auth.verifyOtp({
        email: "imp@example.com",
        token: code === "000000" ? "111111" : "000000",
        type: "email",
      });
      assert.equal(wrong.error?.status, 403);
      const ok = await auth.verifyOtp({ email: "imp@example.com", token: code, type: "email" });
      assert.equal(ok.error, null);
      await auth.signOut();
    },
  );
});

class TestClock implements Clock {
  t = Date.now();
  now() {
    return new Date(this.t);
  }
}

Deno.test("pkce grant: verifier checked (s256 any case, plain), single use, expiry", async () => {
  const clock = new TestClock();
  await withEmail({ AUTHSVC_SMTP_LINK_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    const admin = await srv.serviceRoleToken();
    await call(srv, "POST", "/admin/users", {
      body: {
        email: "g@example.com",
        password: "pw-123456",
        email_confirm: true,
      },
      token: admin,
    });
    const verifier = "v".repeat(20) + crypto.randomUUID() + "x".repeat(10);
    const challenge = await sha256Base64url(verifier);
    const codeFor = async (body: Record<string, unknown>) => {
      const r = await call(srv, "POST", "/magiclink", {
        body: { email: "g@example.com", ...body },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const m = await smtp.waitForMail("g@example.com");
      const loc = (await openLink(local(srv, m.link))).location!;
      return loc.searchParams.get("code")!;
    };
    const grant = (auth_code: string, code_verifier: string) =>
      call(srv, "POST", "/token?grant_type=pkce", { body: { auth_code, code_verifier } });

    const c1 = await codeFor({ code_challenge: challenge, code_challenge_method: "S256" });
    const wrong = await grant(c1, "w".repeat(43));
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error_code, "bad_code_verifier");
    // A wrong verifier leaves the code to the right one (GoTrue's order), which uses it up.
    assert.equal((await grant(c1, verifier)).status, 200);
    const burnt = await grant(c1, verifier);
    assert.equal(burnt.status, 404);
    assert.equal(burnt.body.error_code, "flow_state_not_found");

    const c2 = await codeFor({ code_challenge: challenge, code_challenge_method: "s256" });
    const ok = await grant(c2, verifier);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.ok(ok.body.access_token);
    assert.equal((ok.body.user as { email: string }).email, "g@example.com");

    const plain = "p".repeat(50);
    const c3 = await codeFor({ code_challenge: plain, code_challenge_method: "plain" });
    assert.equal((await grant(c3, plain)).status, 200);

    const c4 = await codeFor({ code_challenge: challenge, code_challenge_method: "s256" });
    clock.t += 301_000;
    const late = await grant(c4, verifier);
    assert.equal(late.status, 422);
    assert.equal(late.body.error_code, "flow_state_expired");
    assert.equal(late.body.msg, "invalid flow state, flow state has expired");

    const missing = await call(srv, "POST", "/token?grant_type=pkce", { body: { auth_code: "x" } });
    assert.equal(missing.status, 400);
    assert.match(String(missing.body.msg), /code_verifier/);
    const badMethod = await call(srv, "POST", "/magiclink", {
      body: {
        email: "g@example.com",
        code_challenge: challenge,
        code_challenge_method: "md5",
      },
    });
    assert.equal(badMethod.status, 400);
    assert.match(String(badMethod.body.msg), /code_challenge_method/);
    // without a challenge the link answers with the token fragment
    await call(srv, "POST", "/magiclink", {
      body: { email: "g@example.com", code_challenge: null },
    });
    const m = await smtp.waitForMail("g@example.com");
    assert.ok(fragment((await openLink(local(srv, m.link))).location!).access_token);
  }, { clock });
});

Deno.test("pkce: an exchange prunes flows never used within a day and codes past their 5 minutes", async () => {
  await withEmail({}, async ({ srv }) => {
    const t = srv.db.t("flow_state");
    const challenge = "c".repeat(43);
    const mk = (method: string) =>
      createFlowState(srv.db, {
        codeChallenge: challenge,
        codeChallengeMethod: "plain",
        authenticationMethod: method,
      });
    const stale = await mk("stale");
    const fresh = await mk("fresh");
    const issued = await mk("issued");
    await srv.db.query(`UPDATE ${t} SET created_at = now() - interval '25 hours' WHERE id = $1`, [
      stale.id,
    ]);
    await srv.db.query(
      `UPDATE ${t} SET auth_code_issued_at = now() - interval '6 minutes' WHERE id = $1`,
      [issued.id],
    );
    const r = await call(srv, "POST", "/token?grant_type=pkce", {
      body: {
        auth_code: "nope",
        code_verifier: challenge,
      },
    });
    assert.equal(r.status, 404);
    const left = await srv.db.query<{ id: string }>(`SELECT id FROM ${t}`);
    assert.deepEqual(left.map((x) => x.id), [fresh.id]);
  });
});

Deno.test("pkce links carry GoTrue's pkce_ prefix; a used one answers its error in the query too", async () => {
  await withEmail({ AUTHSVC_SMTP_LINK_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    const admin = await srv.serviceRoleToken();
    await call(srv, "POST", "/admin/users", {
      body: { email: "q@example.com", email_confirm: true },
      token: admin,
    });
    const challenge = await sha256Base64url("v".repeat(50));
    const r = await call(srv, "POST", "/magiclink", {
      body: { email: "q@example.com", code_challenge: challenge, code_challenge_method: "s256" },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const m = await smtp.waitForMail("q@example.com");
    assert.match(new URL(m.link).searchParams.get("token")!, /^pkce_[0-9a-f]+$/);
    const first = (await openLink(local(srv, m.link))).location!;
    assert.ok(first.searchParams.get("code"));
    // opened again: a server-side app reads the error from the query
    const again = (await openLink(local(srv, m.link))).location!;
    assert.equal(again.searchParams.get("error_code"), "otp_expired");
    assert.equal(again.searchParams.get("error"), "access_denied");
    assert.equal(fragment(again).error_code, "otp_expired");
    // a link without PKCE keeps its error in the fragment only
    assert.equal(
      (await call(srv, "POST", "/magiclink", { body: { email: "q@example.com" } })).status,
      200,
    );
    const plain = await smtp.waitForMail("q@example.com");
    assert.doesNotMatch(new URL(plain.link).searchParams.get("token")!, /^pkce_/);
    await openLink(local(srv, plain.link));
    const used = (await openLink(local(srv, plain.link))).location!;
    assert.equal(used.searchParams.get("error_code"), null);
    assert.equal(fragment(used).error_code, "otp_expired");
  });
});

/**
 * The mail settings a deployment sets, each seen where a user would notice
 * it: MAILER_URLPATHS_*, MAILER_OTP_EXP, MAILER_TEMPLATE_TIMEOUT,
 * MAILER_AUTOCONFIRM, SMTP_USER / SMTP_PASS.
 */
import assert from "node:assert/strict";
import { statusOf } from "../../../server/api/errors.ts";
import type { Clock } from "../../../server/auth/clock.ts";
import { startTestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { confirmedUser, fragment, getUser, local, openLink, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

class TestClock implements Clock {
  t = Date.now();
  now() {
    return new Date(this.t);
  }
}

Deno.test("MAILER_URLPATHS_*: each link kind opens its path (relative to API_EXTERNAL_URL, or absolute)", async () => {
  await withEmail({
    AUTHSVC_API_EXTERNAL_URL: "https://auth.example.com/api",
    AUTHSVC_MAILER_URLPATHS_CONFIRMATION: "/auth/confirm",
    AUTHSVC_MAILER_URLPATHS_RECOVERY: "https://app.example.com/reset-password",
    AUTHSVC_MAILER_URLPATHS_INVITE: "/auth/invited",
    AUTHSVC_MAILER_URLPATHS_EMAIL_CHANGE: "/auth/email",
    AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false",
  }, async ({ srv, smtp }) => {
    const admin = await srv.serviceRoleToken();
    await call(srv, "POST", "/signup", { body: { email: "c@example.com", password: "pw-123456" } });
    const conf = new URL((await smtp.waitForMail("c@example.com")).link);
    assert.equal(conf.origin + conf.pathname, "https://auth.example.com/api/auth/confirm");
    assert.equal(conf.searchParams.get("type"), "signup");

    await confirmedUser(srv, "r@example.com");
    await call(srv, "POST", "/recover", { body: { email: "r@example.com" } });
    const rec = new URL((await smtp.waitForMail("r@example.com")).link);
    assert.equal(rec.origin + rec.pathname, "https://app.example.com/reset-password");
    assert.equal(rec.searchParams.get("type"), "recovery");
    assert.ok(rec.searchParams.get("token"));

    await call(srv, "POST", "/invite", { body: { email: "i@example.com" }, token: admin });
    const inv = new URL((await smtp.waitForMail("i@example.com")).link);
    assert.equal(inv.pathname, "/api/auth/invited");

    const signIn = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: "r@example.com",
        password: "pw-123456",
      },
    });
    await call(srv, "PUT", "/user", {
      body: { email: "r2@example.com" },
      token: String(signIn.body.access_token),
    });
    const ec = new URL((await smtp.waitForMail("r2@example.com")).link);
    assert.equal(ec.pathname, "/api/auth/email");
    assert.equal(ec.searchParams.get("type"), "email_change");

    // magic links use the confirmation path, as in GoTrue
    await call(srv, "POST", "/magiclink", { body: { email: "i@example.com" } });
    const ml = new URL((await smtp.waitForMail("i@example.com")).link);
    assert.equal(ml.pathname, "/api/auth/confirm");
  });
});

Deno.test("MAILER_OTP_EXP: a link and a code stop working once it has passed", async () => {
  const clock = new TestClock();
  await withEmail(
    { AUTHSVC_MAILER_OTP_EXP: "120", AUTHSVC_SMTP_LINK_FREQUENCY: "0" },
    async ({ srv, smtp }) => {
      await confirmedUser(srv, "exp@example.com");
      await call(srv, "POST", "/otp", { body: { email: "exp@example.com" } });
      const a = await smtp.waitForMail("exp@example.com");
      clock.t += 119_000;
      const inTime = await call(srv, "POST", "/verify", {
        body: {
          type: "email",
          email: "exp@example.com",
          token: a.code,
        },
      });
      assert.equal(inTime.status, 200, JSON.stringify(inTime.body));

      await call(srv, "POST", "/otp", { body: { email: "exp@example.com" } });
      const b = await smtp.waitForMail("exp@example.com");
      clock.t += 121_000;
      const late = await call(srv, "POST", "/verify", {
        body: {
          type: "email",
          email: "exp@example.com",
          token: b.code,
        },
      });
      assert.equal(late.status, 403);
      assert.equal(late.body.error_code, "otp_expired");
      const link = await openLink(local(srv, b.link));
      assert.equal(fragment(link.location!).error_code, "otp_expired");
    },
    { clock },
  );
});

Deno.test("MAILER_TEMPLATE_TIMEOUT: a template server that does not answer gives the default body", async () => {
  let release = () => {};
  const hang = new Promise<void>((r) => release = r);
  const ac = new AbortController();
  const tpl = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} },
    async () => {
      await hang;
      return new Response("<p>too late {{ .ConfirmationURL }}</p>");
    },
  );
  try {
    await withEmail({
      AUTHSVC_MAILER_TEMPLATES_RECOVERY: `http://127.0.0.1:${tpl.addr.port}/recovery.html`,
      AUTHSVC_MAILER_TEMPLATE_TIMEOUT: "1",
      LOG_LEVEL: "warn",
    }, async ({ srv, smtp }) => {
      await confirmedUser(srv, "t@example.com");
      const r = await call(srv, "POST", "/recover", { body: { email: "t@example.com" } });
      assert.equal(r.status, 200);
      const mail = await smtp.waitForMail("t@example.com");
      assert.match(mail.text, /Reset Password/);
      assert.doesNotMatch(mail.text, /too late/);
      assert.ok(mail.link.includes("type=recovery"));
      assert.ok(srv.logs.some((l) => l.includes("mail template unavailable")));
    });
  } finally {
    release();
    ac.abort();
    await tpl.finished;
  }
});

Deno.test("MAILER_AUTOCONFIRM: sign-up signs in at once; a permanent user's e-mail change still waits for the new address", async () => {
  await withEmail({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_MAILER_NOTIFICATIONS_EMAIL_CHANGED_ENABLED: "true",
  }, async ({ srv, smtp }) => {
    const su = await call(srv, "POST", "/signup", {
      body: {
        email: "ac@example.com",
        password: "pw-123456",
      },
    });
    assert.equal(su.status, 200);
    assert.ok(su.body.access_token);
    const token = String(su.body.access_token);
    assert.ok((await getUser(srv, token)).email_confirmed_at);
    const up = await call(srv, "PUT", "/user", {
      body: { email: "ac2@example.com" },
      token: token,
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    // GoTrue's user.go: only an anonymous user gets an address at once (issue 17;
    // tests/server/security/email_change_test.ts)
    assert.equal(up.body.email, "ac@example.com");
    assert.equal(up.body.new_email, "ac2@example.com");
    const change = await smtp.waitForMail("ac2@example.com");
    assert.equal(change.subject, "Confirm Email Change");
    // secure change (the default): the current address confirms too; no "changed" notice yet
    const current = await smtp.waitForMail("ac@example.com");
    assert.equal(current.subject, "Confirm Email Change");
  });
});

Deno.test("SMTP_USER / SMTP_PASS: the server authenticates to the mail server", async () => {
  const smtp = await startSmtp({ auth: { user: "mailer", pass: "s3cret" } });
  const good = await startTestServer({
    ...smtp.env,
    AUTHSVC_SMTP_USER: "mailer",
    AUTHSVC_SMTP_PASS: "s3cret",
  });
  const bad = await startTestServer({
    ...smtp.env,
    AUTHSVC_SMTP_USER: "mailer",
    AUTHSVC_SMTP_PASS: "wrong",
  });
  try {
    await good.services.mailer.send({ kind: "magic_link", to: "a@example.com", vars: {} });
    const mail = await smtp.waitForMail("a@example.com");
    assert.equal(mail.authUser, "mailer");
    const err = await bad.services.mailer.send({
      kind: "magic_link",
      to: "b@example.com",
      vars: {},
    })
      .catch((e) => e);
    assert.equal(statusOf(err), 500);
    assert.equal(err.message, "Error sending magic link email");
    assert.ok(!bad.logs.join("\n").includes("wrong"), "the password is not logged");
  } finally {
    await good.close();
    await bad.close();
    await smtp.close();
  }
});

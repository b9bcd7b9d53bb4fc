import assert from "node:assert/strict";
import { confirmedUser, fragment, getUser, local, openLink, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

Deno.test("otp: one mail carries a link and a 6-digit code; either signs in once", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    await confirmedUser(srv, "otp@example.com");
    const r = await call(srv, "POST", "/otp", {
      body: { email: "otp@example.com", create_user: false },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {});
    const mail = await smtp.waitForMail("otp@example.com", { subject: "Your Magic Link" });
    assert.match(mail.code, /^\d{6}$/);
    assert.equal(new URL(mail.link).searchParams.get("type"), "magiclink");
    const v = await call(srv, "POST", "/verify", {
      body: {
        type: "email",
        email: "otp@example.com",
        token: mail.code,
      },
    });
    assert.equal(v.status, 200);
    assert.equal(v.body.type, "magiclink");
    // the link of the same mail is used up with its code
    const link = await openLink(local(srv, mail.link));
    assert.equal(fragment(link.location!).error_code, "otp_expired");
  });
});

Deno.test("otp: create_user governs unknown addresses (422 otp_disabled, as GoTrue)", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const no = await call(srv, "POST", "/otp", {
      body: { email: "ghost@example.com", create_user: false },
    });
    assert.equal(no.status, 422);
    assert.equal(no.body.error_code, "otp_disabled");
    await smtp.expectNoMail("ghost@example.com");
    assert.equal(await srv.services.users.findByEmail("ghost@example.com"), null);

    const yes = await call(srv, "POST", "/otp", {
      body: {
        email: "fresh@example.com",
        data: { plan: "pro" },
      },
    });
    assert.deepEqual(yes.body, {});
    const mail = await smtp.waitForMail("fresh@example.com", { subject: "Confirm Your Signup" });
    const { location } = await openLink(local(srv, mail.link));
    const f = fragment(location!);
    assert.equal(f.type, "signup", location!.hash);
    const me = await getUser(srv, f.access_token);
    assert.ok(me.email_confirmed_at);
    assert.deepEqual(me.user_metadata, { plan: "pro", email_verified: true }); // as GoTrue's User.Confirm
  });
});

Deno.test("magic link: 60 s between links to one address, 429 with Retry-After and no mail", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    await confirmedUser(srv, "ml@example.com");
    const first = await call(srv, "POST", "/magiclink", { body: { email: "ml@example.com" } });
    assert.equal(first.status, 200);
    const mail = await smtp.waitForMail("ml@example.com");
    const again = await call(srv, "POST", "/magiclink", { body: { email: "ml@example.com" } });
    assert.equal(again.status, 429);
    assert.equal(again.body.error_code, "over_email_send_rate_limit");
    assert.ok(Number(again.headers.get("retry-after")) > 0);
    await smtp.expectNoMail("ml@example.com");
    // the first link still works after the refused request
    const { location } = await openLink(local(srv, mail.link));
    assert.equal(fragment(location!).type, "magiclink");
  });
});

Deno.test("recovery: unknown address answers the same; the link signs in and allows a new password", async () => {
  await withEmail(
    { AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: "true" },
    async ({ srv, smtp }) => {
      await confirmedUser(srv, "rec@example.com", "old-password");
      const unknown = await call(srv, "POST", "/recover", {
        body: { email: "nobody@example.com" },
      });
      assert.equal(unknown.status, 200);
      assert.deepEqual(unknown.body, {});
      await smtp.expectNoMail("nobody@example.com");

      const r = await call(srv, "POST", "/recover?redirect_to=http://localhost:3000/reset", {
        body: {
          email: "rec@example.com",
        },
      });
      assert.deepEqual(r.body, {});
      const mail = await smtp.waitForMail("rec@example.com", { subject: "Reset Your Password" });
      const { location } = await openLink(local(srv, mail.link));
      assert.equal(location!.pathname, "/reset");
      const f = fragment(location!);
      assert.equal(f.type, "recovery");
      const up = await call(srv, "PUT", "/user", {
        body: { password: "new-password" },
        token: f.access_token,
      });
      assert.equal(up.status, 200);
      const note = await smtp.waitForMail("rec@example.com", {
        subject: "Your password has been changed",
      });
      assert.ok(note.text.includes("rec@example.com"));
      const login = await call(srv, "POST", "/token?grant_type=password", {
        body: {
          email: "rec@example.com",
          password: "new-password",
        },
      });
      assert.equal(login.status, 200);
      const audit = await srv.db.query<{ payload: { action: string } }>(
        `SELECT payload FROM ${srv.db.t("audit_log_entries")}`,
      );
      assert.ok(audit.some((a) => a.payload.action === "user_recovery_requested"));
    },
  );
});

Deno.test("redirect_to: an allowed one is kept, open-redirect attempts land on SITE_URL", async () => {
  await withEmail(
    { AUTHSVC_URI_ALLOW_LIST: "https://app.example.org/**" },
    async ({ srv, smtp }) => {
      await confirmedUser(srv, "r@example.com");
      await confirmedUser(srv, "r2@example.com");
      await call(srv, "POST", "/magiclink?redirect_to=https://app.example.org/done", {
        body: {
          email: "r@example.com",
        },
      });
      const ok = await smtp.waitForMail("r@example.com");
      assert.equal(
        new URL(ok.link).searchParams.get("redirect_to"),
        "https://app.example.org/done",
      );
      const { location } = await openLink(local(srv, ok.link));
      assert.equal(location!.origin + location!.pathname, "https://app.example.org/done");

      await call(
        srv,
        "POST",
        "/magiclink?redirect_to=" + encodeURIComponent("https://app.example.org@evil.example/"),
        {
          body: {
            email: "r2@example.com",
          },
        },
      );
      const bad = await smtp.waitForMail("r2@example.com");
      assert.equal(new URL(bad.link).searchParams.get("redirect_to"), "http://localhost:3000");
      // a redirect_to added to the link by hand is checked again
      const tampered = new URL(local(srv, bad.link));
      tampered.searchParams.set("redirect_to", "https://evil.example/");
      const t = await openLink(tampered.toString());
      assert.equal(t.location!.origin, "http://localhost:3000");
    },
  );
});

Deno.test("verify: bad input is a 4xx naming the field", async () => {
  await withEmail({}, async ({ srv }) => {
    const noType = await call(srv, "POST", "/verify", { body: { token: "x" } });
    assert.equal(noType.status, 400);
    assert.match(String(noType.body.msg), /type/);
    const badType = await call(srv, "POST", "/verify", { body: { type: "bogus", token: "x" } });
    assert.equal(badType.status, 400);
    const none = await call(srv, "POST", "/verify", { body: { type: "signup" } });
    assert.equal(none.status, 400);
    const emailNoCode = await call(srv, "POST", "/verify", {
      body: { type: "email", token: "123456" },
    });
    assert.equal(emailNoCode.status, 400);
    assert.match(String(emailNoCode.body.msg), /email/);
    const wrong = await call(srv, "POST", "/verify", {
      body: { type: "recovery", token_hash: "nope" },
    });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.body.error_code, "otp_expired");
    const otpBad = await call(srv, "POST", "/otp", { body: { email: "not-an-email" } });
    assert.equal(otpBad.status, 400);
    const otpNone = await call(srv, "POST", "/otp", { body: {} });
    assert.equal(otpNone.status, 400);
    const pk = await call(srv, "POST", "/magiclink", {
      body: {
        email: "a@example.com",
        code_challenge: "short",
        code_challenge_method: "s256",
      },
    });
    assert.equal(pk.status, 400);
    assert.match(String(pk.body.msg), /code_challenge/);
    const g = await srv.fetch("/verify?type=signup", { redirect: "manual" });
    await g.body?.cancel();
    assert.equal(g.status, 303);
    assert.match(g.headers.get("location")!, /error_code=validation_failed/);
    assert.match(g.headers.get("location")!, /#error=invalid_request&/);
  });
});

Deno.test("verify: a banned user's link lands with access_denied and user_banned", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const { id } = await confirmedUser(srv, "banned@example.com");
    await call(srv, "POST", "/magiclink", { body: { email: "banned@example.com" } });
    const mail = await smtp.waitForMail("banned@example.com");
    const ban = await call(srv, "PUT", `/admin/users/${id}`, {
      body: { ban_duration: "24h" },
      token: await srv.serviceRoleToken(),
    });
    assert.equal(ban.status, 200, JSON.stringify(ban.body));
    const { status, location } = await openLink(local(srv, mail.link));
    assert.equal(status, 303);
    assert.equal(location!.origin, "http://localhost:3000");
    const f = fragment(location!);
    assert.equal(f.error, "access_denied");
    assert.equal(f.error_code, "user_banned");
    assert.equal(f.access_token, undefined);
  });
});

Deno.test("EXTERNAL_EMAIL_ENABLED=false: e-mail sign-in, recovery and resend are refused, nothing is sent", async () => {
  await withEmail({ AUTHSVC_EXTERNAL_EMAIL_ENABLED: "false" }, async ({ srv, smtp }) => {
    await confirmedUser(srv, "off@example.com");
    for (
      const [path, body] of [
        ["/otp", { email: "off@example.com" }],
        ["/magiclink", { email: "off@example.com" }],
        ["/recover", { email: "off@example.com" }],
        ["/resend", { type: "signup", email: "off@example.com" }],
      ] as const
    ) {
      const r = await call(srv, "POST", path, { body: body });
      // GoTrue answers 400 on /resend (ResendConfirmationParams.Validate), 422 elsewhere
      assert.equal(r.status, path === "/resend" ? 400 : 422, path);
      assert.equal(r.body.error_code, "email_provider_disabled", path);
    }
    await smtp.expectNoMail("off@example.com");
  });
});

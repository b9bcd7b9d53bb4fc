import assert from "node:assert/strict";
import { fragment, getUser, local, openLink, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

Deno.test("sign-up: the confirmation mail's link confirms and signs in at SITE_URL", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const events: unknown[] = [];
    srv.services.events.on("mail_sent", (a) => events.push(a.kind));
    const r = await call(srv, "POST", "/signup", {
      body: {
        email: "New@Example.com",
        password: "pw-123456",
      },
    });
    assert.equal(r.status, 200);
    assert.ok(r.body.confirmation_sent_at);
    assert.equal(r.body.email_confirmed_at, undefined);
    const mail = await smtp.waitForMail("new@example.com", { subject: "Confirm Your Signup" });
    assert.match(mail.html, /<a href="http:\/\/localhost:8081\/verify\?token=/);
    assert.match(mail.code, /^\d{6}$/);
    assert.deepEqual(events, ["confirmation"]);

    // password sign-in is refused until confirmed
    const early = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: "new@example.com",
        password: "pw-123456",
      },
    });
    assert.equal(early.body.error_code, "email_not_confirmed");

    const link = new URL(mail.link);
    assert.equal(link.searchParams.get("type"), "signup");
    assert.equal(link.searchParams.get("redirect_to"), "http://localhost:3000");
    const opened = `${srv.url}/verify${link.search}`;
    // a mail scanner's HEAD and a prefetch do not use the link up
    assert.equal((await fetch(opened, { method: "HEAD" })).status, 200);
    const pre = await fetch(opened, { headers: { "Sec-Purpose": "prefetch" }, redirect: "manual" });
    await pre.body?.cancel();
    assert.equal(pre.status, 200);

    const res = await fetch(opened, { redirect: "manual" });
    await res.body?.cancel();
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    const status = res.status;
    const location = new URL(res.headers.get("location")!);
    assert.equal(status, 303);
    assert.equal(location!.origin, "http://localhost:3000");
    const f = fragment(location!);
    assert.deepEqual(Object.keys(f).sort(), [
      "access_token",
      "expires_at",
      "expires_in",
      "refresh_token",
      "token_type",
      "type",
    ]);
    assert.equal(f.type, "signup");
    assert.equal(f.token_type, "bearer");
    const me = await getUser(srv, f.access_token);
    assert.equal(me.email, "new@example.com");
    assert.ok(me.email_confirmed_at);

    // the link is single use: a second click lands with the error
    const again = await openLink(opened);
    const e = fragment(again.location!);
    assert.equal(e.error, "access_denied");
    assert.equal(e.error_code, "otp_expired");
    assert.ok(e.error_description);
    // and the code of the same mail is dead too
    const code = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "new@example.com",
        token: mail.code,
      },
    });
    assert.equal(code.status, 403);
    assert.equal(code.body.error_code, "otp_expired");

    const audit = await srv.db.query<{ payload: { action: string } }>(
      `SELECT payload FROM ${srv.db.t("audit_log_entries")} ORDER BY created_at`,
    );
    const actions = audit.map((a) => a.payload.action);
    assert.ok(actions.includes("user_confirmation_requested"));
  });
});

Deno.test("sign-up: typing the code confirms; a repeated sign-up re-sends only within the limit", async () => {
  await withEmail({ AUTHSVC_SMTP_MAX_FREQUENCY: "60s" }, async ({ srv, smtp }) => {
    await call(srv, "POST", "/signup", {
      body: { email: "code@example.com", password: "pw-123456" },
    });
    const first = await smtp.waitForMail("code@example.com");
    // a repeated sign-up within SMTP_MAX_FREQUENCY: same kind of answer, no mail
    const dup = await call(srv, "POST", "/signup", {
      body: {
        email: "code@example.com",
        password: "x-123456",
      },
    });
    assert.equal(dup.status, 200);
    assert.ok(dup.body.id);
    await smtp.expectNoMail("code@example.com");
    // a wrong code fails, the right one signs in with type signup
    const wrong = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "code@example.com",
        token: first.code === "000000" ? "111111" : "000000",
      },
    });
    assert.equal(wrong.status, 403);
    const ok = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "code@example.com",
        token: first.code,
      },
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.type, "signup");
    assert.ok(ok.body.access_token);
    assert.ok(ok.body.refresh_token);
    // a confirmed address signing up again gets no mail and an answer like any other
    const dup2 = await call(srv, "POST", "/signup", {
      body: {
        email: "code@example.com",
        password: "x-123456",
      },
    });
    assert.equal(dup2.status, 200);
    assert.notEqual(dup2.body.id, (ok.body.user as { id: string }).id);
    await smtp.expectNoMail("code@example.com");
  });
});

Deno.test("sign-up: repeated sign-up of an unconfirmed address re-sends after the interval", async () => {
  await withEmail({ AUTHSVC_SMTP_MAX_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    await call(srv, "POST", "/signup", {
      body: { email: "again@example.com", password: "pw-123456" },
    });
    const a = await smtp.waitForMail("again@example.com");
    await call(srv, "POST", "/signup", {
      body: { email: "again@example.com", password: "pw-654321" },
    });
    const b = await smtp.waitForMail("again@example.com");
    assert.notEqual(a.link, b.link);
    // Each sign-up's mail confirms that sign-up (issue 17: a squatter's repeated sign-up
    // must not void the owner's own mail): the second link confirms the second password,
    // and once one link is used the other is void.
    const cur = await openLink(local(srv, b.link));
    assert.ok(fragment(cur.location!).access_token);
    const old = await openLink(local(srv, a.link));
    assert.equal(fragment(old.location!).error_code, "otp_expired");
    const pw = (password: string) =>
      call(srv, "POST", "/token?grant_type=password", {
        body: { email: "again@example.com", password },
      });
    assert.equal((await pw("pw-654321")).status, 200);
    assert.equal((await pw("pw-123456")).status, 400);
  });
});

Deno.test("sign-up: SMTP down is a clear 500, the user is kept, /resend works once mail is back", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    smtp.mode = "refuse";
    const r = await call(srv, "POST", "/signup", {
      body: {
        email: "down@example.com",
        password: "pw-123456",
      },
    });
    assert.equal(r.status, 500);
    assert.equal(r.body.error_code, "email_send_failed");
    assert.equal(r.body.msg, "Error sending confirmation email");
    assert.ok(await srv.services.users.findByEmail("down@example.com"), "user row kept");
    smtp.mode = "accept";
    const rs = await call(srv, "POST", "/resend", {
      body: { type: "signup", email: "down@example.com" },
    });
    assert.equal(rs.status, 200);
    assert.equal(typeof rs.body.message_id, "string");
    const mail = await smtp.waitForMail("down@example.com");
    const ok = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "down@example.com",
        token: mail.code,
      },
    });
    assert.equal(ok.status, 200);
    // /resend of an unknown or confirmed address: same answer, no mail
    const unknown = await call(srv, "POST", "/resend", {
      body: {
        type: "signup",
        email: "nobody@example.com",
      },
    });
    assert.equal(unknown.status, 200);
    assert.equal(typeof unknown.body.message_id, "string");
    const confirmed = await call(srv, "POST", "/resend", {
      body: {
        type: "signup",
        email: "down@example.com",
      },
    });
    assert.equal(confirmed.status, 200);
    await smtp.expectNoMail("down@example.com");
    await smtp.expectNoMail("nobody@example.com", 0);
  });
});

import assert from "node:assert/strict";
import type { TestServer } from "../../helpers/server.ts";
import { confirmedUser, fragment, getUser, local, openLink, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

async function signIn(srv: TestServer, email: string, password = "pw-123456"): Promise<string> {
  await confirmedUser(srv, email, password);
  const r = await call(srv, "POST", "/token?grant_type=password", { body: { email, password } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.body.access_token);
}

Deno.test("e-mail change (secure, the default): both addresses confirm, then a notification", async () => {
  await withEmail(
    { AUTHSVC_MAILER_NOTIFICATIONS_EMAIL_CHANGED_ENABLED: "true" },
    async ({ srv, smtp }) => {
      const token = await signIn(srv, "old@example.com");
      const r = await call(srv, "PUT", "/user", {
        body: { email: "New@Example.com" },
        token: token,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.email, "old@example.com");
      assert.equal(r.body.new_email, "new@example.com");
      assert.ok(r.body.email_change_sent_at);
      const toNew = await smtp.waitForMail("new@example.com", { subject: "Confirm Email Change" });
      const toOld = await smtp.waitForMail("old@example.com", { subject: "Confirm Email Change" });
      assert.match(toNew.text, /old@example\.com to new@example\.com/);
      assert.notEqual(toNew.link, toOld.link);

      const first = await openLink(local(srv, toNew.link));
      const f1 = fragment(first.location!);
      assert.match(f1.message, /other email/);
      assert.equal(f1.access_token, undefined);
      assert.equal((await getUser(srv, token)).email, "old@example.com");

      // the current address confirms by typing its code
      const second = await call(srv, "POST", "/verify", {
        body: {
          type: "email_change",
          email: "old@example.com",
          token: toOld.code,
        },
      });
      assert.equal(second.status, 200, JSON.stringify(second.body));
      assert.equal(second.body.type, "email_change");
      const me = await getUser(srv, String(second.body.access_token));
      assert.equal(me.email, "new@example.com");
      assert.equal(me.new_email, undefined);
      const note = await smtp.waitForMail("old@example.com", {
        subject: "Your email address has been changed",
      });
      assert.match(note.text, /old@example\.com to new@example\.com/);
      const login = await call(srv, "POST", "/token?grant_type=password", {
        body: {
          email: "new@example.com",
          password: "pw-123456",
        },
      });
      assert.equal(login.status, 200);
    },
  );
});

Deno.test("e-mail change (secure off): one link to the new address; taken address refused", async () => {
  await withEmail(
    { AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false" },
    async ({ srv, smtp }) => {
      const token = await signIn(srv, "a@example.com");
      await signIn(srv, "taken@example.com");
      const taken = await call(srv, "PUT", "/user", {
        body: { email: "taken@example.com" },
        token: token,
      });
      assert.equal(taken.status, 422);
      assert.equal(taken.body.error_code, "email_exists");
      const r = await call(srv, "PUT", "/user?redirect_to=http://localhost:3000/changed", {
        body: {
          email: "b@example.com",
        },
        token: token,
      });
      assert.equal(r.status, 200);
      const mail = await smtp.waitForMail("b@example.com");
      await smtp.expectNoMail("a@example.com");
      const { location } = await openLink(local(srv, mail.link));
      assert.equal(location!.pathname, "/changed");
      const f = fragment(location!);
      assert.equal(f.type, "email_change");
      assert.equal((await getUser(srv, f.access_token)).email, "b@example.com");
      // /resend email_change with nothing pending: same answer, no mail
      const rs = await call(srv, "POST", "/resend", {
        body: {
          type: "email_change",
          email: "b@example.com",
        },
      });
      assert.equal(rs.status, 200);
      await smtp.expectNoMail("b@example.com");
      // without secure change there is no link for the current address
      const gl = await call(srv, "POST", "/admin/generate_link", {
        body: {
          type: "email_change_current",
          email: "b@example.com",
          new_email: "c@example.com",
        },
        token: await srv.serviceRoleToken(),
      });
      assert.equal(gl.status, 400);
      assert.match(String(gl.body.msg), /secure email change/);
    },
  );
});

Deno.test("e-mail change: /resend sends the change mails again", async () => {
  await withEmail({ AUTHSVC_SMTP_MAX_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    const token = await signIn(srv, "c@example.com");
    await call(srv, "PUT", "/user", { body: { email: "d@example.com" }, token: token });
    await smtp.waitForMail("d@example.com");
    await smtp.waitForMail("c@example.com");
    const rs = await call(srv, "POST", "/resend", {
      body: { type: "email_change", email: "c@example.com" },
    });
    assert.equal(rs.status, 200);
    const n = await smtp.waitForMail("d@example.com");
    const o = await smtp.waitForMail("c@example.com");
    assert.equal((await openLink(local(srv, n.link))).status, 303);
    const done = fragment((await openLink(local(srv, o.link))).location!);
    assert.equal((await getUser(srv, done.access_token)).email, "d@example.com");
  });
});

Deno.test("reauthentication: with the setting on, a password change needs the nonce from the mail", async () => {
  await withEmail(
    { AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "true" },
    async ({ srv, smtp }) => {
      const token = await signIn(srv, "re@example.com");
      const noNonce = await call(srv, "PUT", "/user", {
        body: { password: "new-pw-1" },
        token: token,
      });
      assert.equal(noNonce.status, 400);
      assert.equal(noNonce.body.error_code, "reauthentication_needed");
      const ra = await call(srv, "GET", "/reauthenticate", { token: token });
      assert.equal(ra.status, 200);
      const mail = await smtp.waitForMail("re@example.com", {
        subject: "Confirm reauthentication",
      });
      assert.match(mail.code, /^\d{6}$/);
      const bad = await call(srv, "PUT", "/user", {
        body: {
          password: "new-pw-1",
          nonce: mail.code === "000000" ? "111111" : "000000",
        },
        token: token,
      });
      assert.equal(bad.status, 422);
      assert.equal(bad.body.error_code, "reauthentication_not_valid");
      // a password refused for itself does not use the nonce up
      const weak = await call(srv, "PUT", "/user", {
        body: { password: "1", nonce: mail.code },
        token: token,
      });
      assert.equal(weak.status, 422);
      assert.equal(weak.body.error_code, "weak_password");
      const same = await call(srv, "PUT", "/user", {
        body: { password: "pw-123456", nonce: mail.code },
        token: token,
      });
      assert.equal(same.status, 422);
      assert.equal(same.body.error_code, "same_password");
      const ok = await call(srv, "PUT", "/user", {
        body: { password: "new-pw-1", nonce: mail.code },
        token: token,
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.ok(ok.body.reauthentication_sent_at);
      // the nonce is single use
      const again = await call(srv, "PUT", "/user", {
        body: { password: "new-pw-2", nonce: mail.code },
        token: token,
      });
      assert.equal(again.status, 422);
      // without the setting no nonce is needed (data changes never need one)
      const data = await call(srv, "PUT", "/user", { body: { data: { x: 1 } }, token: token });
      assert.equal(data.status, 200);
      const unauth = await call(srv, "GET", "/reauthenticate");
      assert.equal(unauth.status, 401);
    },
  );
});

Deno.test("e-mail change (secure): both links opened at the same moment complete the change once", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const token = await signIn(srv, "both@example.com");
    await call(srv, "PUT", "/user", { body: { email: "both2@example.com" }, token: token });
    const toNew = await smtp.waitForMail("both2@example.com");
    const toOld = await smtp.waitForMail("both@example.com");
    const [a, b] = await Promise.all([
      openLink(local(srv, toNew.link)),
      openLink(local(srv, toOld.link)),
    ]);
    const fa = fragment(a.location!);
    const fb = fragment(b.location!);
    // one lands with the "other email" message, the other signs in with the new address
    assert.equal([fa.message, fb.message].filter(Boolean).length, 1, `${a.location} ${b.location}`);
    const done = fa.access_token ?? fb.access_token;
    assert.ok(done);
    assert.equal((await getUser(srv, done)).email, "both2@example.com");
  });
});

Deno.test("current password: with reauthentication on too, the nonce is asked first and kept", async () => {
  await withEmail({
    AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD: "true",
    AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "true",
  }, async ({ srv, smtp }) => {
    const token = await signIn(srv, "cur@example.com");
    // GoTrue's order (user.go UserUpdate): the reauthentication, then the current password
    const first = await call(srv, "PUT", "/user", { body: { password: "new-pw-1" }, token: token });
    assert.equal(first.body.error_code, "reauthentication_needed");
    assert.equal((await call(srv, "GET", "/reauthenticate", { token: token })).status, 200);
    const mail = await smtp.waitForMail("cur@example.com", { subject: "Confirm reauthentication" });
    const missing = await call(srv, "PUT", "/user", {
      body: { password: "new-pw-1", nonce: mail.code },
      token,
    });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error_code, "current_password_required");
    const wrong = await call(srv, "PUT", "/user", {
      body: {
        password: "new-pw-1",
        nonce: mail.code,
        current_password: "not-it",
      },
      token: token,
    });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error_code, "current_password_invalid");
    // the refused requests did not use up the nonce
    const ok = await call(srv, "PUT", "/user", {
      body: {
        password: "new-pw-1",
        nonce: mail.code,
        current_password: "pw-123456",
      },
      token: token,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });
});

Deno.test("current password: a refused change sends nothing; data-only updates need none", async () => {
  await withEmail({
    AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_CURRENT_PASSWORD: "true",
    AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false",
  }, async ({ srv, smtp }) => {
    const token = await signIn(srv, "cur2@example.com");
    const r = await call(srv, "PUT", "/user", {
      body: {
        email: "cur2-new@example.com",
        password: "new-pw-1",
        current_password: "not-it",
      },
      token: token,
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error_code, "current_password_invalid");
    const data = await call(srv, "PUT", "/user", { body: { data: { x: 1 } }, token: token });
    assert.equal(data.status, 200, JSON.stringify(data.body));
    // the e-mail change of the refused request was not started: the next mail is this one's
    const change = await call(srv, "PUT", "/user", {
      body: { email: "cur2-new@example.com" },
      token: token,
    });
    assert.equal(change.status, 200, JSON.stringify(change.body));
    await smtp.waitForMail("cur2-new@example.com");
    assert.equal(smtp.count("cur2-new@example.com"), 1);
  });
});

import assert from "node:assert/strict";
import { GoTrueAdminApi } from "../../helpers/deps.ts";
import { fragment, getUser, local, openLink, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

Deno.test("invite: service role invites; the mail's link signs in; a user cannot invite", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const admin = await srv.serviceRoleToken();
    const r = await call(srv, "POST", "/invite", {
      body: {
        email: "Guest@Example.com",
        data: { team: "a" },
      },
      token: admin,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.email, "guest@example.com");
    assert.ok(r.body.invited_at);
    const mail = await smtp.waitForMail("guest@example.com", { subject: "You have been invited" });
    assert.match(mail.text, /http:\/\/localhost:3000/);
    const { location } = await openLink(local(srv, mail.link));
    const f = fragment(location!);
    assert.equal(f.type, "invite");
    const me = await getUser(srv, f.access_token);
    assert.ok(me.email_confirmed_at);
    assert.deepEqual(me.user_metadata, { team: "a", email_verified: true }); // GoTrue's User.Confirm
    // the invited user sets a password
    const pw = await call(srv, "PUT", "/user", {
      body: { password: "chosen-pw" },
      token: f.access_token,
    });
    assert.equal(pw.status, 200);
    // inviting a confirmed address is refused; a plain user may not invite
    const dup = await call(srv, "POST", "/invite", {
      body: { email: "guest@example.com" },
      token: admin,
    });
    assert.equal(dup.status, 422);
    assert.equal(dup.body.error_code, "email_exists");
    const asUser = await call(srv, "POST", "/invite", {
      body: { email: "x@example.com" },
      token: f.access_token,
    });
    assert.equal(asUser.status, 403);
    assert.equal(asUser.body.error_code, "not_admin");
    const none = await call(srv, "POST", "/invite", { body: { email: "x@example.com" } });
    assert.equal(none.status, 401);
    const audit = await srv.db.query<{ payload: { action: string } }>(
      `SELECT payload FROM ${srv.db.t("audit_log_entries")}`,
    );
    const actions = audit.map((a) => a.payload.action);
    assert.ok(actions.includes("user_invited"));
    assert.ok(actions.includes("invite_accepted"));
  });
});

Deno.test("generate_link: every type answers the link fields and sends no mail", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const admin = await srv.serviceRoleToken();
    const gen = (body: Record<string, unknown>) =>
      call(srv, "POST", "/admin/generate_link", { body: body, token: admin });

    const su = await gen({
      type: "signup",
      email: "gl@example.com",
      password: "pw-123456",
      data: { a: 1 },
      redirectTo: "http://localhost:3000/welcome",
    });
    assert.equal(su.status, 200, JSON.stringify(su.body));
    for (
      const k of [
        "action_link",
        "email_otp",
        "hashed_token",
        "verification_type",
        "redirect_to",
        "id",
        "email",
      ]
    ) {
      assert.ok(su.body[k], k);
    }
    assert.equal(su.body.verification_type, "signup");
    assert.equal(su.body.redirect_to, "http://localhost:3000/welcome");
    const al = new URL(String(su.body.action_link));
    assert.equal(al.searchParams.get("token"), su.body.hashed_token);
    assert.equal(al.searchParams.get("type"), "signup");
    assert.equal(al.searchParams.get("redirect_to"), "http://localhost:3000/welcome");
    assert.deepEqual(su.body.user_metadata, { a: 1 });
    // the hashed token works with POST /verify token_hash
    const v = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        token_hash: su.body.hashed_token,
      },
    });
    assert.equal(v.status, 200);
    const login = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: "gl@example.com",
        password: "pw-123456",
      },
    });
    assert.equal(login.status, 200);

    const ml = await gen({ type: "magiclink", email: "gl@example.com" });
    assert.equal(ml.body.verification_type, "magiclink");
    const mlv = await call(srv, "POST", "/verify", {
      body: {
        type: "magiclink",
        email: "gl@example.com",
        token: ml.body.email_otp,
      },
    });
    assert.equal(mlv.status, 200);

    const rc = await gen({
      type: "recovery",
      email: "gl@example.com",
      redirect_to: "https://evil.example",
    });
    assert.equal(rc.body.redirect_to, "http://localhost:3000");
    const { location } = await openLink(local(srv, String(rc.body.action_link)));
    assert.equal(fragment(location!).type, "recovery");

    const inv = await gen({ type: "invite", email: "inv@example.com" });
    assert.equal(inv.body.verification_type, "invite");
    assert.ok(inv.body.invited_at);

    const ec = await gen({
      type: "email_change_new",
      email: "gl@example.com",
      new_email: "gl2@example.com",
    });
    assert.equal(ec.status, 200, JSON.stringify(ec.body));
    assert.equal(ec.body.new_email, "gl2@example.com");
    assert.equal(ec.body.verification_type, "email_change_new");
    assert.equal(new URL(String(ec.body.action_link)).searchParams.get("type"), "email_change");
    const ecv = await openLink(local(srv, String(ec.body.action_link)));
    const f = fragment(ecv.location!);
    assert.equal(f.type, "email_change");
    assert.equal((await getUser(srv, f.access_token)).email, "gl2@example.com");

    // a magic link for an unknown address makes the user, with a sign-up link (GoTrue)
    const fresh = await gen({ type: "magiclink", email: "fresh@example.com" });
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.equal(fresh.body.verification_type, "signup");
    assert.equal(new URL(String(fresh.body.action_link)).searchParams.get("type"), "signup");
    const fv = fragment((await openLink(local(srv, String(fresh.body.action_link)))).location!);
    assert.equal(fv.type, "signup");
    assert.ok((await getUser(srv, fv.access_token)).email_confirmed_at);

    const missing = await gen({ type: "recovery", email: "nobody@example.com" });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error_code, "user_not_found");
    const badType = await gen({ type: "bogus", email: "gl2@example.com" });
    assert.equal(badType.status, 400);
    const exists = await gen({ type: "signup", email: "gl2@example.com", password: "pw-123456" });
    assert.equal(exists.status, 422);
    const noNew = await gen({ type: "email_change_current", email: "gl2@example.com" });
    assert.equal(noNew.status, 400);
    assert.match(String(noNew.body.msg), /new_email/);
    const notAdmin = await call(srv, "POST", "/admin/generate_link", {
      body: {
        type: "magiclink",
        email: "gl2@example.com",
      },
      token: f.access_token,
    });
    assert.equal(notAdmin.status, 403);

    assert.equal(smtp.received.length, 0, "generate_link sends nothing");
  });
});

Deno.test("auth-js admin: inviteUserByEmail and generateLink (newEmail, redirectTo)", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const admin = new GoTrueAdminApi({
      url: srv.url,
      headers: { Authorization: `Bearer ${await srv.serviceRoleToken()}` },
    });
    const inv = await admin.inviteUserByEmail("js@example.com", {
      data: { via: "auth-js" },
      redirectTo: "http://localhost:3000/joined",
    });
    assert.equal(inv.error, null);
    assert.equal(inv.data.user?.email, "js@example.com");
    assert.ok(inv.data.user?.invited_at);
    const mail = await smtp.waitForMail("js@example.com");
    assert.equal(
      new URL(mail.link).searchParams.get("redirect_to"),
      "http://localhost:3000/joined",
    );
    const { location } = await openLink(local(srv, mail.link));
    assert.equal(location!.pathname, "/joined");
    assert.equal(fragment(location!).type, "invite");

    const gl = await admin.generateLink({
      type: "email_change_current",
      email: "js@example.com",
      newEmail: "js2@example.com",
      options: { redirectTo: "http://localhost:3000/moved" },
    });
    assert.equal(gl.error, null);
    assert.equal(gl.data.properties?.verification_type, "email_change_current");
    assert.equal(gl.data.properties?.redirect_to, "http://localhost:3000/moved");
    assert.match(String(gl.data.properties?.email_otp), /^\d{6}$/);
    assert.equal(gl.data.user?.new_email, "js2@example.com");
    const v = await call(srv, "POST", "/verify", {
      body: {
        type: "email_change",
        email: "js@example.com",
        token: gl.data.properties?.email_otp,
      },
    });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    assert.equal((v.body.user as { email: string }).email, "js2@example.com");
  });
});

Deno.test("POST /verify: invite (code + password) and recovery (token_hash, link token) from the mails", async () => {
  await withEmail({ AUTHSVC_SMTP_LINK_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    const admin = await srv.serviceRoleToken();
    await call(srv, "POST", "/invite", { body: { email: "pv@example.com" }, token: admin });
    const inv = await smtp.waitForMail("pv@example.com", { subject: "You have been invited" });
    const v = await call(srv, "POST", "/verify", {
      body: {
        type: "invite",
        email: "pv@example.com",
        token: inv.code,
        password: "invited-pw",
      },
    });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    assert.equal(v.body.type, "invite");
    assert.ok(v.body.access_token);
    const login = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: "pv@example.com",
        password: "invited-pw",
      },
    });
    assert.equal(login.status, 200, "the password given with the invite code is set");

    await call(srv, "POST", "/recover", { body: { email: "pv@example.com" } });
    const r1 = await smtp.waitForMail("pv@example.com", { subject: "Reset Your Password" });
    const byHash = await call(srv, "POST", "/verify", {
      body: {
        type: "recovery",
        token_hash: new URL(r1.link).searchParams.get("token"),
      },
    });
    assert.equal(byHash.status, 200, JSON.stringify(byHash.body));
    assert.equal(byHash.body.type, "recovery");

    await call(srv, "POST", "/recover", { body: { email: "pv@example.com" } });
    const r2 = await smtp.waitForMail("pv@example.com", { subject: "Reset Your Password" });
    // the link's token is a token_hash: as `token` without an address GoTrue refuses it
    const byToken = await call(srv, "POST", "/verify", {
      body: {
        type: "recovery",
        token: new URL(r2.link).searchParams.get("token"),
      },
    });
    assert.equal(byToken.status, 400, JSON.stringify(byToken.body));
    assert.equal(byToken.body.error_code, "validation_failed");
    // a recovery token is not a magic link, nor a sign-up
    await call(srv, "POST", "/recover", { body: { email: "pv@example.com" } });
    const r3 = await smtp.waitForMail("pv@example.com", { subject: "Reset Your Password" });
    const wrongType = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "pv@example.com",
        token: r3.code,
      },
    });
    assert.equal(wrongType.status, 403);
    const right = await call(srv, "POST", "/verify", {
      body: {
        type: "recovery",
        email: "pv@example.com",
        token: r3.code,
      },
    });
    assert.equal(right.status, 200, "a wrong type does not use the code up");
  });
});

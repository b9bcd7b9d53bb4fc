/**
 * E-mail change (issue 17, item 4; GoTrue's internal/api/user.go): a
 * permanent user always proves a new address, also with MAILER_AUTOCONFIRM on;
 * only an anonymous user with autoconfirm gets the address at once, and then
 * stops being anonymous. Otherwise anyone signed in could claim an address
 * they do not own.
 */
import assert from "node:assert/strict";
import { authJsClient } from "../../helpers/auth_js.ts";

import { local, openLink, withEmail } from "../email/_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

const ENV = {
  AUTHSVC_MAILER_AUTOCONFIRM: "true",
  AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
};

Deno.test("address claim by e-mail change on an autoconfirm server: a permanent user's new address waits for its owner", async () => {
  await withEmail(ENV, async ({ srv, smtp }) => {
    const attacker = authJsClient(srv.url);
    const mine = uniqueEmail("attacker");
    const victim = uniqueEmail("victim");
    const su = await attacker.signUp({ email: mine, password: "attacker-pw-1" });
    assert.ok(su.data.session);

    const up = await attacker.updateUser({ email: victim });
    assert.equal(up.error, null);
    assert.equal(up.data.user?.email, mine, "the address switched without its owner");
    assert.equal(up.data.user?.new_email, victim);
    // The victim's address is not the attacker's: no sign-in with it, and the
    // victim can still sign up with it.
    const signIn = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: victim,
        password: "attacker-pw-1",
      },
    });
    assert.equal(signIn.status, 400);
    assert.equal(signIn.body.error_code, "invalid_credentials");
    const me = await attacker.getUser();
    assert.equal(me.data.user?.email, mine);

    // The confirmation went to the new address; only its owner can complete the change.
    const mail = await smtp.waitForMail(victim, { subject: "Confirm Email Change" });
    const victimSignup = await authJsClient(srv.url).signUp({
      email: victim,
      password: "victim-pw-2",
    });
    assert.equal(victimSignup.error, null);
    assert.ok(victimSignup.data.session, "the victim signs up with their own address");
    // Even if the victim opened the link and the attacker confirmed from their own
    // address (MAILER_SECURE_EMAIL_CHANGE_ENABLED), the address stays the victim's.
    const own = await smtp.waitForMail(mine, { subject: "Confirm Email Change" });
    await openLink(local(srv, mail.link));
    const { location } = await openLink(local(srv, own.link));
    const f = new URLSearchParams(location!.hash.slice(1));
    assert.equal(f.get("access_token"), null);
    assert.equal(f.get("error_code"), "email_exists");
    assert.equal((await attacker.getUser()).data.user?.email, mine);
  });
});

Deno.test("e-mail change of a permanent user on an autoconfirm server completes through the mailed link", async () => {
  await withEmail(ENV, async ({ srv, smtp }) => {
    const client = authJsClient(srv.url);
    const from = uniqueEmail("from");
    const to = uniqueEmail("to");
    await client.signUp({ email: from, password: "pw-123456" });
    assert.equal((await client.updateUser({ email: to })).error, null);
    const mail = await smtp.waitForMail(to, { subject: "Confirm Email Change" });
    const current = await smtp.waitForMail(from, { subject: "Confirm Email Change" });
    await openLink(local(srv, current.link)); // secure change: both addresses confirm
    const { location } = await openLink(local(srv, mail.link));
    const f = new URLSearchParams(location!.hash.slice(1));
    assert.equal(f.get("type"), "email_change", location!.hash);
    const me = await call(srv, "GET", "/user", { token: f.get("access_token")! });
    assert.equal(me.body.email, to);
  });
});

Deno.test("anonymous user adds an address on an autoconfirm server: at once, and no longer anonymous", async () => {
  await withEmail(ENV, async ({ srv, smtp }) => {
    const client = authJsClient(srv.url);
    const anon = await client.signInAnonymously();
    assert.equal(anon.error, null);
    assert.equal(anon.data.user?.is_anonymous, true);
    const email = uniqueEmail("anon");
    const up = await client.updateUser({ email });
    assert.equal(up.error, null);
    assert.equal(up.data.user?.email, email);
    assert.ok(up.data.user?.email_confirmed_at);
    assert.equal(up.data.user?.is_anonymous, false);
    await smtp.expectNoMail(email);
    // Now permanent: a further change needs the new address's confirmation.
    const next = uniqueEmail("next");
    const again = await client.updateUser({ email: next });
    assert.equal(again.data.user?.email, email);
    assert.equal(again.data.user?.new_email, next);
  });
});

Deno.test("anonymous user confirms an address by its mail (autoconfirm off): no longer anonymous", async () => {
  await withEmail({ AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true" }, async ({ srv, smtp }) => {
    const client = authJsClient(srv.url);
    const anon = await client.signInAnonymously();
    assert.equal(anon.error, null);
    const email = uniqueEmail("anon2");
    const up = await client.updateUser({ email });
    assert.equal(up.error, null);
    assert.equal(up.data.user?.is_anonymous, true, "not before the address is confirmed");
    const mail = await smtp.waitForMail(email, { subject: "Confirm Email Change" });
    const { location } = await openLink(local(srv, mail.link));
    const f = new URLSearchParams(location!.hash.slice(1));
    assert.equal(f.get("type"), "email_change", location!.hash);
    const me = await call(srv, "GET", "/user", { token: f.get("access_token")! });
    assert.equal(me.body.email, email);
    assert.equal(me.body.is_anonymous, false);
  });
});

// Issue 38, item 8: the secure change needs both addresses, and which one confirmed is
// recorded; /resend starts the count again before it issues new links.
Deno.test("secure e-mail change completed from the new address alone: a /resend's second link does not count twice", async () => {
  await withEmail({ AUTHSVC_SMTP_MAX_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    // The attacker holds a session of the victim (no mailbox) and moves the account to
    // an address of their own; the victim's current address must confirm too.
    const victim = uniqueEmail("victim");
    const made = await call(srv, "POST", "/admin/users", {
      body: { email: victim, password: "victim-pw-1", email_confirm: true },
      token: await srv.serviceRoleToken(),
    });
    assert.equal(made.status, 200, made.text);
    const session = await call(srv, "POST", "/token?grant_type=password", {
      body: { email: victim, password: "victim-pw-1" },
    });
    const token = session.body.access_token as string;
    const theirs = uniqueEmail("attacker");
    const change = await call(srv, "PUT", "/user", { body: { email: theirs }, token });
    assert.equal(change.status, 200, change.text);
    const first = await smtp.waitForMail(theirs, { subject: "Confirm Email Change" });
    const newSide = (code: string) =>
      call(srv, "POST", "/verify", { body: { type: "email_change", email: theirs, token: code } });
    const partial = await newSide(first.code);
    assert.equal(partial.status, 200, partial.text);
    assert.match(String(partial.body.msg), /confirm link sent to the other email/);

    // A /resend whose mail to the current address is slow: the new address's second
    // link arrives while that mail is still on its way.
    const release = smtp.hold(victim);
    const resent = call(srv, "POST", "/resend", { body: { type: "email_change", email: theirs } });
    const second = await smtp.waitForMail(theirs, { subject: "Confirm Email Change" });
    const again = await newSide(second.code);
    release();
    assert.equal((await resent).status, 200);
    assert.equal(again.status, 200, again.text);
    assert.equal(
      again.body.access_token,
      undefined,
      "no session: the current address has not confirmed",
    );
    assert.match(String(again.body.msg), /confirm link sent to the other email/);
    const stored = await call(srv, "GET", `/admin/users/${(made.body.id as string)}`, {
      token: await srv.serviceRoleToken(),
    });
    assert.equal(stored.body.email, victim, "the account keeps the victim's address");
  });
});

Deno.test("(fidelity) secure e-mail change: after a /resend both addresses confirm again, as GoTrue resets", async () => {
  await withEmail({ AUTHSVC_SMTP_MAX_FREQUENCY: "0" }, async ({ srv, smtp }) => {
    const owner = uniqueEmail("owner");
    const made = await call(srv, "POST", "/admin/users", {
      body: { email: owner, password: "owner-pw-1", email_confirm: true },
      token: await srv.serviceRoleToken(),
    });
    const session = await call(srv, "POST", "/token?grant_type=password", {
      body: { email: owner, password: "owner-pw-1" },
    });
    const next = uniqueEmail("next");
    const token = session.body.access_token as string;
    assert.equal((await call(srv, "PUT", "/user", { body: { email: next }, token })).status, 200);
    const verify = (email: string, code: string) =>
      call(srv, "POST", "/verify", { body: { type: "email_change", email, token: code } });
    const current = await smtp.waitForMail(owner, { subject: "Confirm Email Change" });
    await smtp.waitForMail(next, { subject: "Confirm Email Change" });
    assert.equal((await verify(owner, current.code)).body.access_token, undefined, "partial");

    const resent = await call(srv, "POST", "/resend", {
      body: { type: "email_change", email: next },
    });
    assert.equal(resent.status, 200, resent.text);
    const newSide = await smtp.waitForMail(next, { subject: "Confirm Email Change" });
    const currentAgain = await smtp.waitForMail(owner, { subject: "Confirm Email Change" });
    const one = await verify(next, newSide.code);
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.access_token, undefined, "the current address confirms again");
    const both = await verify(owner, currentAgain.code);
    assert.equal(both.status, 200, both.text);
    assert.ok(both.body.access_token, "both sides since the resend: the change completes");
    const stored = await call(srv, "GET", `/admin/users/${made.body.id as string}`, {
      token: await srv.serviceRoleToken(),
    });
    assert.equal(stored.body.email, next);
  });
});

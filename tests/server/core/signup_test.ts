import assert from "node:assert/strict";
import { postJson, startTestServer } from "../../helpers/server.ts";
import { SMTPServer } from "../../helpers/deps.ts";
import { abandonWhileHashWaits, passwordGrant, signUpSession } from "./_helpers.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { call, type Json, uniqueEmail } from "../../helpers/http.ts";

Deno.test("signup with autoconfirm on answers a session whose user has an email identity", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const address = uniqueEmail("Auto").toUpperCase();
    const r = await postJson(srv, "/signup", {
      email: address,
      password: "secret-pw-1",
      data: { name: "Ann" },
      gotrue_meta_security: {},
      code_challenge: null,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.token_type, "bearer");
    assert.equal(r.body.expires_in, 3600);
    assert.equal(typeof r.body.refresh_token, "string");
    const user = r.body.user as Record<string, unknown>;
    assert.equal(user.email, address.toLowerCase());
    assert.ok(user.email_confirmed_at);
    assert.deepEqual(user.user_metadata, { name: "Ann" });
    assert.deepEqual(user.app_metadata, { provider: "email", providers: ["email"] });
    assert.equal(user.is_anonymous, false);
    const ids = user.identities as Record<string, unknown>[];
    assert.equal(ids.length, 1);
    assert.equal(ids[0].provider, "email");
    assert.equal(ids[0].id, user.id);
    assert.deepEqual(ids[0].identity_data, {
      sub: user.id,
      email: address.toLowerCase(),
      email_verified: true,
      phone_verified: false,
    });
    // the same address again: GoTrue answers 422 user_already_exists
    const dup = await postJson(srv, "/signup", { email: address, password: "other-pw-2" });
    assert.equal(dup.status, 422);
    assert.equal(dup.body.error_code, "user_already_exists");
  } finally {
    await srv.close();
  }
});

Deno.test("with autoconfirm a sign-up of a taken address gets nothing of the account", async () => {
  // An attacker signing up someone's address, in any spelling the server folds to it, must get
  // no session, no password of theirs and no second user from it; nothing of the attempt is
  // stored but its audit entry (user_repeated_signup).
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const address = uniqueEmail("taken");
    const first = await postJson(srv, "/signup", {
      email: address,
      password: "owner-pw-1",
      data: { name: "Owner" },
    });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const owner = first.body.user as Record<string, unknown>;
    const counts = async () => {
      const [row] = await srv.db.query<Record<string, number>>(
        `SELECT (SELECT count(*)::int FROM ${srv.db.t("users")} WHERE email = $1) AS users,
           (SELECT count(*)::int FROM ${srv.db.t("identities")} WHERE email = $1) AS identities,
           (SELECT count(*)::int FROM ${srv.db.t("sessions")}) AS sessions,
           (SELECT count(*)::int FROM ${srv.db.t("refresh_tokens")}) AS tokens,
           (SELECT count(*)::int FROM ${srv.db.t("audit_log_entries")}
             WHERE payload->>'action' = 'user_signedup') AS signedup,
           (SELECT count(*)::int FROM ${srv.db.t("audit_log_entries")}
             WHERE payload->>'action' = 'user_repeated_signup'
               AND payload->>'actor_id' = $2::text) AS repeated`,
        [address, owner.id],
      );
      return row;
    };
    const before = await counts();
    assert.deepEqual(before, {
      users: 1,
      identities: 1,
      sessions: 1,
      tokens: 1,
      signedup: 1,
      repeated: 0,
    });
    for (const spelling of [address, address.toUpperCase(), `  ${address}  `]) {
      const again = await postJson(srv, "/signup", {
        email: spelling,
        password: "attacker-pw-2",
        data: { name: "Mallory" },
      });
      assert.equal(again.status, 422, JSON.stringify(again.body));
      assert.equal(again.body.error_code, "user_already_exists");
      assert.equal(again.body.access_token, undefined);
    }
    assert.deepEqual(await counts(), { ...before, repeated: 3 });
    const attacker = await passwordGrant(srv, { email: address, password: "attacker-pw-2" });
    assert.equal(attacker.status, 400);
    assert.equal(attacker.body.error_code, "invalid_credentials");
    const signIn = await passwordGrant(srv, { email: address, password: "owner-pw-1" });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const user = signIn.body.user as Record<string, unknown>;
    assert.equal(user.id, owner.id);
    assert.deepEqual(user.user_metadata, { name: "Owner" });

    // A deleted user's address is free again: a soft-deleted user no longer holds it.
    const admin = await srv.serviceRoleToken();
    const del = await call(srv, "DELETE", `/admin/users/${owner.id}`, {
      body: { should_soft_delete: true },
      token: admin,
    });
    assert.equal(del.status, 200, JSON.stringify(del.body));
    const fresh = await postJson(srv, "/signup", { email: address, password: "new-owner-pw-3" });
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.notEqual((fresh.body.user as Record<string, unknown>).id, owner.id);
  } finally {
    await srv.close();
  }
});

Deno.test("signup with autoconfirm off answers the user; a known address gets a fabricated one", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "false" });
  try {
    const address = uniqueEmail("manual");
    const r = await postJson(srv, "/signup", { email: address, password: "secret-pw-1" });
    assert.equal(r.status, 200);
    assert.equal(r.body.access_token, undefined);
    assert.equal(r.body.email, address);
    assert.equal(r.body.email_confirmed_at, undefined);
    const signIn = await passwordGrant(srv, { email: address, password: "secret-pw-1" });
    assert.equal(signIn.status, 400);
    assert.equal(signIn.body.error_code, "email_not_confirmed");

    const dup = await postJson(srv, "/signup", { email: address, password: "whatever-9" });
    assert.equal(dup.status, 200);
    assert.notEqual(dup.body.id, r.body.id);
    assert.deepEqual(Object.keys(dup.body).sort(), Object.keys(r.body).sort());
    assert.equal(dup.body.email, address);
    // the existing account was not touched: its password is still the first one
    const row = await srv.services.users.findByEmail(address);
    assert.ok(await srv.services.passwords.verify("secret-pw-1", row!.encrypted_password));
  } finally {
    await srv.close();
  }
});

Deno.test("signup with autoconfirm off sends the confirmation; a refused one undoes the sign-up", async () => {
  // RATE_LIMIT_EMAIL_SENT=1: the first confirmation is sent, the second is refused (429), and
  // the user it was for is removed again, so that sign-up can simply be retried later.
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...smtp.env, AUTHSVC_RATE_LIMIT_EMAIL_SENT: "1" });
  try {
    const a = uniqueEmail("hook");
    const r = await postJson(srv, "/signup", { email: a, password: "secret-pw-1" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.confirmation_sent_at);
    await smtp.waitForMail(a);

    const f = uniqueEmail("refused");
    const bad = await postJson(srv, "/signup", { email: f, password: "secret-pw-1" });
    assert.equal(bad.status, 429, JSON.stringify(bad.body));
    assert.equal(bad.body.error_code, "over_email_send_rate_limit");
    assert.equal(await srv.services.users.findByEmail(f), null);
    assert.ok(await srv.services.users.findByEmail(a));
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("phone signup stores E.164 digits; duplicates with SMS autoconfirm are 400", async () => {
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
  });
  try {
    const r = await postJson(srv, "/signup", { phone: "+1 555 123 4567", password: "secret-pw-1" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const user = r.body.user as Record<string, unknown>;
    assert.equal(user.phone, "15551234567");
    assert.ok(user.phone_confirmed_at);
    assert.deepEqual(user.app_metadata, { provider: "phone", providers: ["phone"] });
    const dup = await postJson(srv, "/signup", { phone: "+15551234567", password: "secret-pw-1" });
    assert.equal(dup.status, 400);
    assert.equal(dup.body.code, 400);
    assert.match(String(dup.body.msg), /already registered/);
    const signIn = await passwordGrant(srv, { phone: "+15551234567", password: "secret-pw-1" });
    assert.equal(signIn.status, 200);
    const bad = await postJson(srv, "/signup", { phone: "+0123", password: "secret-pw-1" });
    assert.equal(bad.status, 422);
    assert.match(String(bad.body.msg), /phone/);
  } finally {
    await srv.close();
  }
});

Deno.test("signup refusals: disabled sign-ups, disabled providers, weak passwords, anonymous", async () => {
  const off = await startTestServer({
    AUTHSVC_DISABLE_SIGNUP: "true",
  });
  const noEmail = await startTestServer({
    AUTHSVC_EXTERNAL_EMAIL_ENABLED: "false",
    AUTHSVC_PASSWORD_MIN_LENGTH: "8",
  });
  const strict = await startTestServer({
    AUTHSVC_PASSWORD_MIN_LENGTH: "8",
    AUTHSVC_PASSWORD_REQUIRED_CHARACTERS: "0123456789:abc\\:",
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  });
  try {
    let r = await postJson(off, "/signup", { email: uniqueEmail("u"), password: "secret-pw-1" });
    assert.equal(r.status, 422);
    assert.equal(r.body.error_code, "signup_disabled");
    r = await postJson(noEmail, "/signup", { email: uniqueEmail("u"), password: "secret-pw-1" });
    assert.equal(r.body.error_code, "email_provider_disabled");
    r = await postJson(noEmail, "/signup", { phone: "15551234567", password: "secret-pw-1" });
    assert.equal(r.body.error_code, "phone_provider_disabled");
    r = await postJson(noEmail, "/signup", {});
    assert.equal(r.body.error_code, "anonymous_provider_disabled");

    r = await postJson(strict, "/signup", { email: uniqueEmail("u"), password: "short" });
    assert.equal(r.status, 422);
    assert.equal(r.body.error_code, "weak_password");
    assert.deepEqual((r.body.weak_password as { reasons: string[] }).reasons, [
      "length",
      "characters",
    ]);
    r = await postJson(strict, "/signup", { email: uniqueEmail("u"), password: "longenough1" });
    assert.equal(r.body.error_code, "weak_password"); // no character of "abc:"
    r = await postJson(strict, "/signup", { email: uniqueEmail("u"), password: "longenough1:" });
    assert.equal(r.status, 200);
    r = await postJson(strict, "/signup", { email: "not-an-address", password: "longenough1:" });
    assert.equal(r.status, 400);
    assert.match(String(r.body.msg), /email/);
    r = await postJson(strict, "/signup", { email: uniqueEmail("u") });
    assert.equal(r.status, 422);
    assert.match(String(r.body.msg), /password/);
    r = await postJson(strict, "/signup", { email: 42, password: "x" });
    assert.equal(r.status, 400);
    assert.match(String(r.body.msg), /email must be a string/);

    r = await postJson(strict, "/signup", { email: null, password: "longenough1:" });
    assert.equal(r.status, 422);
    assert.match(String(r.body.msg), /email or phone/);

    const anon = await postJson(strict, "/signup", { data: { theme: "dark" } });
    assert.equal(anon.status, 200);
    const au = anon.body.user as Record<string, unknown>;
    assert.equal(au.is_anonymous, true);
    assert.equal(au.email, "");
    const me = await call(strict, "GET", "/user", {
      headers: {
        authorization: `Bearer ${anon.body.access_token}`,
      },
    });
    assert.equal(me.status, 200);
    assert.equal(me.body.is_anonymous, true);
    const pw = await call(strict, "PUT", "/user", {
      body: { password: "longenough1:" },
      headers: {
        authorization: `Bearer ${anon.body.access_token}`,
      },
    });
    assert.equal(pw.status, 422);
    assert.match(String(pw.body.msg), /anonymous/);
    // GoTrue (reauthenticate.go): a user with neither e-mail nor phone gets 400 validation_failed.
    const re = await call(strict, "GET", "/reauthenticate", {
      token: String(anon.body.access_token),
    });
    assert.equal(re.status, 400);
    assert.equal(re.body.error_code, "validation_failed");
    assert.equal(
      re.body.msg,
      "Reauthentication requires the user to have an email or a phone number",
    );
  } finally {
    await off.close();
    await noEmail.close();
    await strict.close();
  }
});

Deno.test("parallel sign-ups of one address make one user", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "false" });
  try {
    const a = uniqueEmail("race");
    const answers = await Promise.all(
      Array.from(
        { length: 6 },
        () => postJson(srv, "/signup", { email: a, password: "secret-pw-1" }),
      ),
    );
    // Whichever request created the user, and however the others interleave with it (a
    // machine under load interleaves them differently), every answer is 200.
    for (const r of answers) assert.equal(r.status, 200, JSON.stringify(r.body));
    const rows = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("users")} WHERE email = $1`,
      [a],
    );
    assert.equal(rows[0].n, 1);
  } finally {
    await srv.close();
  }
});

Deno.test("a sign-up racing the one that creates the user leaves the confirmation to it", async () => {
  // The interleaving a loaded machine produced (CI-style run with the cores busy): request A
  // creates the user; request B finds it before A has sent its confirmation and, as the repeated
  // sign-up of an unconfirmed address, sent one itself, taking the recipient's send slot; A's own
  // send was then refused (429) and A deleted the user it had created. Here the same steps run in
  // that order: the user as A has created it, B's sign-up, then A's send must still be allowed.
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "false" });
  try {
    const a = uniqueEmail("race-step");
    const s = srv.services;
    const created = await s.users.createWithIdentities({
      aud: "authenticated",
      role: "authenticated",
      email: a,
      encrypted_password: await s.passwords.hash("secret-pw-1"),
    }, ["email"]);
    const b = await postJson(srv, "/signup", { email: a, password: "secret-pw-1" });
    assert.equal(b.status, 200, JSON.stringify(b.body));
    // A's confirmation (flows.ts: kind "confirmation", the address, SMTP_MAX_FREQUENCY).
    await s.sendLimits.check({
      channel: "email",
      recipient: a.toLowerCase(),
      kind: "confirmation",
      intervalSec: s.config.smtp.maxFrequency,
    });
    assert.ok(await s.users.findById(created.id), "the user stays");

    // A user created longer ago than the interval and still without a confirmation (its mail
    // failed): a repeated sign-up sends it again, as before, which takes the send slot.
    const old = uniqueEmail("race-old");
    const oldUser = await s.users.createWithIdentities({
      aud: "authenticated",
      role: "authenticated",
      email: old,
      encrypted_password: await s.passwords.hash("secret-pw-1"),
    }, ["email"]);
    await srv.db.query(
      `UPDATE ${
        srv.db.t("users")
      } SET created_at = now() - make_interval(secs => $2) WHERE id = $1`,
      [oldUser.id, s.config.smtp.maxFrequency + 5],
    );
    const again = await postJson(srv, "/signup", { email: old, password: "secret-pw-1" });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    await assert.rejects(
      s.sendLimits.check({
        channel: "email",
        recipient: old.toLowerCase(),
        kind: "confirmation",
        intervalSec: s.config.smtp.maxFrequency,
      }),
      (e: Error & { errorCode?: string }) => e.errorCode === "over_email_send_rate_limit",
      "the repeated sign-up sent the confirmation",
    );
  } finally {
    await srv.close();
  }
});

Deno.test("signed-up users can sign in (helper sanity with autoconfirm)", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const a = uniqueEmail("u");
    await signUpSession(srv, a);
    const r = await passwordGrant(srv, { email: a, password: "secret-pw-1" });
    assert.equal(r.status, 200);
  } finally {
    await srv.close();
  }
});

/** An SMTP server that takes `delayMs` to accept each mail, as a remote one does. */
async function slowSmtp(delayMs: number) {
  let received = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(
      stream: { resume(): void; on(e: string, f: () => void): void },
      _s: unknown,
      cb: () => void,
    ) {
      stream.resume();
      stream.on("end", () => setTimeout(() => (received++, cb()), delayMs));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    env: { AUTHSVC_SMTP_HOST: "127.0.0.1", AUTHSVC_SMTP_PORT: String(port) },
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

Deno.test("a known address's sign-up answers like a fresh one: members, timestamps, time taken", async () => {
  const smtp = await slowSmtp(800);
  const srv = await startTestServer({ ...smtp.env, AUTHSVC_SMTP_MAX_FREQUENCY: "0s" });
  const timed = async (address: string) => {
    const t0 = performance.now();
    const r = await postJson(srv, "/signup", { email: address, password: "secret-pw-1" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return { ms: performance.now() - t0, body: r.body as Json };
  };
  /** The shape of a value: member names and types, recursively. */
  const shape = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(shape)
      : v && typeof v === "object"
      ? Object.fromEntries(Object.entries(v).sort().map(([k, x]) => [k, shape(x)]))
      : typeof v;
  /** What the timestamps of a sign-up answer tell about how it was made. */
  const story = (u: Json) => {
    const at = (k: string) => Date.parse(String(u[k]));
    const identity = (u.identities as Json[])[0];
    return {
      confirmationAfterCreation: at("confirmation_sent_at") > at("created_at"),
      updatedWithConfirmation: Math.abs(at("updated_at") - at("confirmation_sent_at")) < 500,
      identityWithUser: identity.created_at === u.created_at &&
        identity.last_sign_in_at === u.created_at,
    };
  };
  try {
    const known = uniqueEmail("known");
    const fresh = await timed(known);
    await timed(uniqueEmail("fresh"));
    const unconfirmed = await timed(known); // its confirmation mail is sent again
    await srv.db.query(
      `UPDATE ${srv.db.t("users")} SET email_confirmed_at = now() WHERE email = $1`,
      [known],
    );
    const confirmed = await timed(known); // no mail: the wait stands in for it
    assert.equal(smtp.received(), 3);

    assert.deepEqual(shape(unconfirmed.body), shape(fresh.body));
    assert.deepEqual(story(unconfirmed.body), story(fresh.body));
    assert.notEqual(unconfirmed.body.id, fresh.body.id);
    // A confirmed address answers as GoTrue's sanitizeUser does: no
    // identities, which supabase-js apps read as "already registered".
    assert.deepEqual(confirmed.body.identities, []);
    const withoutIdentities = (u: Json) => shape({ ...u, identities: [] });
    assert.deepEqual(withoutIdentities(confirmed.body), withoutIdentities(fresh.body));
    assert.notEqual(confirmed.body.id, fresh.body.id);
    assert.deepEqual(story(fresh.body), {
      confirmationAfterCreation: true,
      updatedWithConfirmation: true,
      identityWithUser: true,
    });
    // Without its mail a confirmed address would answer in a fraction of the
    // time (no insert, no SMTP round trip); it waits as long as fresh
    // sign-ups' work took, which the slow mail server makes at least 800 ms.
    assert.ok(confirmed.ms >= 800, `${confirmed.ms} ms for a confirmed address`);
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("over the e-mail send cap a known address is refused like a new one, not answered 200", async () => {
  // A clock that stands still: both 429s are computed at the same instant, so their
  // Retry-After cannot differ by a second boundary crossed between the two requests.
  const at = new Date();
  const srv = await startTestServer({ AUTHSVC_RATE_LIMIT_EMAIL_SENT: "2" }, {
    clock: { now: () => new Date(at) },
  });
  try {
    const known = uniqueEmail("capped");
    for (const address of [known, uniqueEmail("second")]) {
      const r = await postJson(srv, "/signup", { email: address, password: "secret-pw-1" });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    await srv.db.query(
      `UPDATE ${srv.db.t("users")} SET email_confirmed_at = now() WHERE email = $1`,
      [known],
    );
    const fresh = await postJson(srv, "/signup", {
      email: uniqueEmail("third"),
      password: "secret-pw-1",
    });
    const dup = await postJson(srv, "/signup", { email: known, password: "secret-pw-1" });
    assert.equal(fresh.status, 429);
    assert.equal(dup.status, fresh.status);
    assert.deepEqual(dup.body, fresh.body);
    assert.equal(dup.headers.get("retry-after"), fresh.headers.get("retry-after"));
  } finally {
    await srv.close();
  }
});

Deno.test("a sign-up whose client went away before its password was hashed creates nobody", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true", LOG_LEVEL: "info" });
  try {
    const address = uniqueEmail("gone-signup");
    await abandonWhileHashWaits(srv, "/signup", "/signup", {
      email: address,
      password: "secret-pw-1",
    });
    const [{ n }] = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("users")} WHERE email = $1`,
      [address],
    );
    assert.equal(n, 0, "no account behind an answer nobody read");
    // The address is free: signing up again works.
    assert.equal((await signUpSession(srv, address)).user.email, address);
  } finally {
    await srv.close();
  }
});

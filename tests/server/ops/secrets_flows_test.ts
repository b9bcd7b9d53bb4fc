/**
 * "No secret ever appears in a log line", checked on every flow the server
 * has: e-mail (sign-up confirmation, recovery, magic link), phone (OTP
 * sign-in, phone change, reauthentication), MFA (TOTP enrolment, challenge,
 * verify), admin (create, update, generate_link) and external providers (the
 * whole OAuth round trip). Each test runs at LOG_LEVEL=debug, so every line
 * the server can write is captured, and collects every secret the flow
 * handled: passwords, JWTs, refresh tokens, mailed and texted codes, link
 * tokens, the TOTP secret and codes, gateway and provider credentials, the
 * provider's authorization code.
 */
import assert from "node:assert/strict";
import { startTestServer, TEST_JWT_SECRET, type TestServer } from "../../helpers/server.ts";
import { startSmsFake } from "../../helpers/sms_fakes.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { startProviderFake } from "../../helpers/provider_fakes.ts";
import { client as authClient, totpAt } from "../mfa/_helpers.ts";
import { call, type Json, uniqueEmail } from "../../helpers/http.ts";

/** Asserts that no log line holds any of `secrets` (nor any JWT). */
function assertNoSecret(srv: TestServer, secrets: string[]): void {
  const text = srv.logs.join("\n");
  assert.ok(srv.logs.length >= 5, "the flows were logged");
  for (const s of secrets) {
    assert.ok(s && s.length >= 6, `a collected secret is too short to search for: "${s}"`);
    assert.ok(!text.includes(s), `a log line contains a secret (${s.slice(0, 4)}...)`);
  }
  assert.doesNotMatch(text, /eyJ[\w-]+\.[\w-]+\.[\w-]+/, "a JWT is in the logs");
}

/** Every token value of a session answer. */
function sessionSecrets(body: Json): string[] {
  return [String(body.access_token), String(body.refresh_token)];
}

Deno.test("no secret in the logs: e-mail flows (confirmation, recovery, magic link) over SMTP", async () => {
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...smtp.env, LOG_LEVEL: "debug" });
  const secrets: string[] = [TEST_JWT_SECRET];
  try {
    const address = uniqueEmail("mail");
    const password = "Mail-Flow-Password-7";
    secrets.push(password);
    assert.equal(
      (await call(srv, "POST", "/signup", { body: { email: address, password } })).status,
      200,
    );
    const confirm = await smtp.waitForMail(address);
    const linkToken = new URL(confirm.link).searchParams.get("token")!;
    secrets.push(linkToken, confirm.code);
    const v = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: address,
        token: confirm.code,
      },
    });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    secrets.push(...sessionSecrets(v.body));

    assert.equal((await call(srv, "POST", "/recover", { body: { email: address } })).status, 200);
    const recovery = await smtp.waitForMail(address);
    secrets.push(new URL(recovery.link).searchParams.get("token")!, recovery.code);
    const r = await call(srv, "POST", "/verify", {
      body: {
        type: "recovery",
        email: address,
        token: recovery.code,
      },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    secrets.push(...sessionSecrets(r.body));
    const newPassword = "Recovered-Password-8";
    secrets.push(newPassword);
    const upd = await call(srv, "PUT", "/user", {
      body: { password: newPassword },
      headers: {
        authorization: `Bearer ${r.body.access_token}`,
      },
    });
    assert.equal(upd.status, 200, JSON.stringify(upd.body));

    // A wrong guess of a mailed code, then a magic link opened in the browser.
    await call(srv, "POST", "/verify", {
      body: { type: "email", email: address, token: "99887766" },
    });
    assert.equal((await call(srv, "POST", "/otp", { body: { email: address } })).status, 200);
    const magic = await smtp.waitForMail(address);
    secrets.push(new URL(magic.link).searchParams.get("token")!, magic.code);
    const opened = await srv.fetch(new URL(magic.link).pathname + new URL(magic.link).search, {
      redirect: "manual",
    });
    await opened.body?.cancel();
    assert.equal(opened.status, 303);
    const fragment = new URLSearchParams(new URL(opened.headers.get("location")!).hash.slice(1));
    secrets.push(fragment.get("access_token")!, fragment.get("refresh_token")!);

    assertNoSecret(srv, secrets);
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("no secret in the logs: phone flows (OTP sign-in, phone change, reauthentication)", async () => {
  const sms = await startSmsFake("twilio");
  const srv = await startTestServer({
    ...sms.env,
    LOG_LEVEL: "debug",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_SMS_MAX_FREQUENCY: "0",
  });
  const secrets: string[] = [TEST_JWT_SECRET, sms.env.AUTHSVC_SMS_TWILIO_AUTH_TOKEN];
  try {
    const phone = "+15553330001";
    assert.equal((await call(srv, "POST", "/otp", { body: { phone } })).status, 200);
    const code = sms.lastCode(phone)!;
    secrets.push(code);
    await call(srv, "POST", "/verify", { body: { type: "sms", phone, token: "000000" } });
    const v = await call(srv, "POST", "/verify", { body: { type: "sms", phone, token: code } });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    secrets.push(...sessionSecrets(v.body));
    const auth = { authorization: `Bearer ${v.body.access_token}` };

    const newPhone = "+15553330002";
    assert.equal(
      (await call(srv, "PUT", "/user", { body: { phone: newPhone }, headers: auth })).status,
      200,
    );
    const changeCode = sms.lastCode(newPhone)!;
    secrets.push(changeCode);
    const moved = await call(srv, "POST", "/verify", {
      body: {
        type: "phone_change",
        phone: newPhone,
        token: changeCode,
      },
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    secrets.push(...sessionSecrets(moved.body));

    const moveAuth = { authorization: `Bearer ${moved.body.access_token}` };
    assert.equal((await call(srv, "GET", "/reauthenticate", { headers: moveAuth })).status, 200);
    const nonce = sms.lastCode(newPhone)!;
    assert.notEqual(nonce, changeCode);
    secrets.push(nonce);
    const password = "Phone-Password-After-Nonce-3";
    secrets.push(password);
    const pw = await call(srv, "PUT", "/user", { body: { password, nonce }, headers: moveAuth });
    assert.equal(pw.status, 200, JSON.stringify(pw.body));
    const inn = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        phone: newPhone,
        password,
      },
    });
    assert.equal(inn.status, 200, JSON.stringify(inn.body));
    secrets.push(...sessionSecrets(inn.body));
    assert.deepEqual(sms.violations, []);

    assertNoSecret(srv, secrets);
  } finally {
    await srv.close();
    await sms.close();
  }
});

Deno.test("no secret in the logs: MFA (TOTP) and admin flows", async () => {
  const srv = await startTestServer({ LOG_LEVEL: "debug", AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  const secrets: string[] = [TEST_JWT_SECRET];
  try {
    // Admin: create a user with a password, change it, generate a link.
    const adminToken = await srv.serviceRoleToken();
    secrets.push(adminToken);
    const admin = { authorization: `Bearer ${adminToken}` };
    const address = uniqueEmail("adm");
    const first = "Admin-Set-Password-1";
    const created = await call(srv, "POST", "/admin/users", {
      body: {
        email: address,
        password: first,
        email_confirm: true,
      },
      headers: admin,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const password = "Admin-Changed-Password-2";
    secrets.push(first, password);
    const updated = await call(srv, "PUT", `/admin/users/${created.body.id}`, {
      body: { password },
      headers: admin,
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const link = await call(srv, "POST", "/admin/generate_link", {
      body: {
        type: "magiclink",
        email: address,
      },
      headers: admin,
    });
    assert.equal(link.status, 200, JSON.stringify(link.body));
    secrets.push(String(link.body.hashed_token), String(link.body.email_otp));
    secrets.push(new URL(String(link.body.action_link)).searchParams.get("token")!);

    // MFA: enroll TOTP, challenge, a wrong code, the right code.
    const client = authClient(srv);
    const signedIn = await client.signInWithPassword({ email: address, password });
    assert.equal(signedIn.error, null);
    secrets.push(...sessionSecrets(signedIn.data.session as unknown as Json));
    const enrolled = await client.mfa.enroll({ factorType: "totp", friendlyName: "app" });
    assert.equal(enrolled.error, null);
    const totpSecret = enrolled.data!.totp.secret;
    secrets.push(totpSecret, new URL(enrolled.data!.totp.uri).searchParams.get("secret")!);
    const challenge = await client.mfa.challenge({ factorId: enrolled.data!.id });
    assert.equal(challenge.error, null);
    const wrong = await client.mfa.verify({
      factorId: enrolled.data!.id,
      challengeId: challenge.data!.id,
      code: "123456" === totpAt(totpSecret, Date.now()) ? "654321" : "123456",
    });
    assert.ok(wrong.error);
    const code = totpAt(totpSecret, Date.now());
    secrets.push(code);
    const verified = await client.mfa.verify({
      factorId: enrolled.data!.id,
      challengeId: challenge.data!.id,
      code,
    });
    assert.equal(verified.error, null, String(verified.error?.message));
    secrets.push(...sessionSecrets(verified.data as unknown as Json));

    // Six-digit codes may occur by chance in ids and times: search them only as field values.
    const codeLike = [code];
    assertNoSecret(srv, secrets.filter((s) => !codeLike.includes(s)));
    for (const line of srv.logs) assert.ok(!line.includes(`"${code}"`), "a TOTP code is logged");
  } finally {
    await srv.close();
  }
});

Deno.test("no secret in the logs: an external provider's OAuth round trip", async () => {
  const fake = await startProviderFake("github", {
    user: { id: "4242", email: "oauth-logs@example.org", emailVerified: true, name: "Ada" },
  });
  const srv = await startTestServer({
    ...fake.env("http://localhost:8081/callback"),
    LOG_LEVEL: "debug",
  });
  const secrets: string[] = [TEST_JWT_SECRET, fake.secret];
  try {
    const start = await srv.fetch("/authorize?provider=github&scopes=repo", { redirect: "manual" });
    await start.body?.cancel();
    const to = start.headers.get("location")!;
    secrets.push(new URL(to).searchParams.get("state")!);
    const cb = await fake.approve(to);
    const cbUrl = new URL(cb.url);
    secrets.push(cbUrl.searchParams.get("code")!);
    const cookie = start.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
    const landed = await srv.fetch(`${cbUrl.pathname}${cbUrl.search}`, {
      ...cb.init,
      headers: { cookie },
      redirect: "manual",
    });
    await landed.body?.cancel();
    const hash = new URLSearchParams(new URL(landed.headers.get("location")!).hash.slice(1));
    assert.ok(hash.get("access_token"), landed.headers.get("location")!);
    secrets.push(hash.get("access_token")!, hash.get("refresh_token")!);
    assert.ok(hash.get("provider_token"), "the provider token is handed over");
    secrets.push(hash.get("provider_token")!);
    assert.deepEqual(fake.problems, []);

    assertNoSecret(srv, secrets);
  } finally {
    await srv.close();
    await fake.close();
  }
});

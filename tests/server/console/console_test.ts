/**
 * The operators' console over HTTP (docs/console.md): off by default, the
 * headers that keep it safe, sign-in limited to admin roles, cookies only,
 * CSRF on every call (tests/server/security/console_cross_origin_test.ts
 * attacks the reads), and the development inbox only where
 * SMTP_HOST is unset. tests/server/console/browser_test.ts drives the pages.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { CONSOLE_CSP } from "../../../server/console/routes.ts";
import { api, TestClock, totpAt } from "../mfa/_helpers.ts";
import { Client, createUser, uniqueEmail } from "./_helpers.ts";

const ON = { AUTHSVC_CONSOLE_ENABLED: "true" };

Deno.test("console: off by default", async () => {
  const srv = await startTestServer({});
  try {
    for (const path of ["/console/", "/console/assets/app.js", "/console/api/me"]) {
      const res = await srv.fetch(path);
      await res.body?.cancel();
      assert.equal(res.status, 404, path);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("console: page headers, cookie flags, CSRF and admin-only sign-in", async () => {
  const srv = await startTestServer(ON);
  try {
    const op = new Client(srv);
    const page = await op.fetch("/console/");
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="\/console\/assets\/app.js">/);
    assert.equal(page.headers.get("content-security-policy"), CONSOLE_CSP);
    assert.doesNotMatch(CONSOLE_CSP, /unsafe|https?:|\*/);
    assert.equal(page.headers.get("x-frame-options"), "DENY");
    const csrfCookie = page.headers.getSetCookie().find((c) =>
      c.startsWith("authsvc_console_csrf=")
    );
    assert.ok(csrfCookie, "the page sets the CSRF cookie");
    assert.match(csrfCookie, /SameSite=Strict/);

    // The page's own files, nothing from elsewhere, well under 100 KB.
    let bytes = (await srv.fetch("/console/").then((r) => r.arrayBuffer())).byteLength;
    for (const f of ["app.js", "app.css", "icon.svg"]) {
      const r = await srv.fetch(`/console/assets/${f}`);
      assert.equal(r.status, 200, f);
      bytes += (await r.arrayBuffer()).byteLength;
    }
    assert.ok(bytes < 100_000, `first page is ${bytes} bytes`);
    const missing = await srv.fetch("/console/assets/../../.env");
    await missing.body?.cancel();
    assert.equal(missing.status, 404);

    const adminEmail = uniqueEmail("op");
    await createUser(srv, adminEmail, "operator-password-1", "supabase_admin");
    const plainEmail = uniqueEmail("plain");
    await createUser(srv, plainEmail, "plain-password-1");

    // Without the CSRF header, or from another origin: refused before any sign-in.
    const noCsrf = await op.fetch("/console/api/login", {
      method: "POST",
      csrf: false,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: adminEmail, password: "operator-password-1" }),
    });
    assert.equal(noCsrf.status, 403);
    assert.equal((await noCsrf.json()).error_code, "csrf_failed");
    const crossOrigin = await op.fetch("/console/api/login", {
      method: "POST",
      headers: { "content-type": "application/json", origin: "https://evil.example" },
      body: JSON.stringify({ email: adminEmail, password: "operator-password-1" }),
    });
    assert.equal(crossOrigin.status, 403);
    await crossOrigin.body?.cancel();
    assert.equal(op.cookies.has("authsvc_console_at"), false);

    // A user whose role is not an admin role does not get in.
    const other = new Client(srv);
    await (await other.fetch("/console/")).body?.cancel();
    const refused = await other.json("/console/api/login", "POST", {
      email: plainEmail,
      password: "plain-password-1",
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error_code, "not_admin");
    assert.equal(other.cookies.has("authsvc_console_at"), false);
    assert.equal((await other.json("/console/api/me")).status, 401);

    // Wrong password: the password grant's own answer.
    const wrong = await op.json("/console/api/login", "POST", {
      email: adminEmail,
      password: "not-it",
    });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error_code, "invalid_credentials");

    const ok = await op.fetch("/console/api/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: adminEmail, password: "operator-password-1" }),
    });
    assert.equal(ok.status, 200);
    const body = await ok.json();
    assert.equal(body.mfa_required, false);
    assert.equal(JSON.stringify(body).includes("access_token"), false, "no token in the page");
    const at = ok.headers.getSetCookie().find((c) => c.startsWith("authsvc_console_at="));
    assert.ok(at);
    assert.match(at, /HttpOnly/);
    assert.match(at, /SameSite=Strict/);
    assert.match(at, /Path=\/console\//);
    assert.doesNotMatch(at, /Secure/, "no Secure flag on localhost");

    const me = await op.json("/console/api/me");
    assert.equal(me.status, 200);
    assert.equal(me.body.email, adminEmail);
    assert.equal(me.body.inbox, true, "SMTP_HOST is unset: the inbox exists");

    // The API on the operator's behalf: only the listed paths.
    const list = await op.json(`/console/api/gotrue/admin/users?filter=${plainEmail}`);
    assert.equal(list.status, 200);
    assert.equal(list.body.users.length, 1);
    const notForwarded = await op.json("/console/api/gotrue/user");
    assert.equal(notForwarded.status, 404);
    // A state-changing call without the CSRF header is refused even when signed in.
    const banNoCsrf = await op.fetch(`/console/api/gotrue/admin/users/${list.body.users[0].id}`, {
      method: "PUT",
      csrf: false,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ban_duration: "1h" }),
    });
    assert.equal(banNoCsrf.status, 403);
    await banNoCsrf.body?.cancel();
    const still = await srv.fetch("/token?grant_type=password", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: plainEmail, password: "plain-password-1" }),
    });
    assert.equal(still.status, 200, "the refused ban did not happen");
    await still.body?.cancel();

    // Signing out ends the session: the old cookie opens nothing.
    const oldAt = op.cookies.get("authsvc_console_at")!;
    assert.equal((await op.json("/console/api/logout", "POST", {})).status, 200);
    const replay = new Client(srv);
    replay.cookies.set("authsvc_console_at", oldAt);
    replay.cookies.set("authsvc_console_csrf", op.cookies.get("authsvc_console_csrf")!);
    assert.equal((await replay.json("/console/api/me")).status, 401);
  } finally {
    await srv.close();
  }
});

Deno.test("console: a Secure cookie on a non-local host", async () => {
  const srv = await startTestServer(ON);
  try {
    const email = uniqueEmail("op");
    await createUser(srv, email, "operator-password-1", "supabase_admin");
    // As a proxy forwards it: the request names the public host.
    const site = "https://auth.example.com";
    const page = await srv.app.fetch(new Request(`${site}/console/`), "127.0.0.1");
    await page.body?.cancel();
    const csrf = page.headers.getSetCookie()[0];
    assert.match(csrf, /; Secure/);
    const token = csrf.split(";")[0].split("=")[1];
    const res = await srv.app.fetch(
      new Request(`${site}/console/api/login`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          cookie: `authsvc_console_csrf=${token}`,
          "x-csrf-token": token,
          origin: site,
        },
        body: JSON.stringify({ email, password: "operator-password-1" }),
      }),
      "127.0.0.1",
    );
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.ok(res.headers.getSetCookie().length >= 2);
    for (const c of res.headers.getSetCookie()) assert.match(c, /; Secure/, c);
  } finally {
    await srv.close();
  }
});

Deno.test("console: no development inbox when SMTP_HOST is set", async () => {
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...ON, ...smtp.env });
  try {
    const email = uniqueEmail("op");
    await createUser(srv, email, "operator-password-1", "supabase_admin");
    const op = new Client(srv);
    await (await op.fetch("/console/")).body?.cancel();
    assert.equal(
      (await op.json("/console/api/login", "POST", { email, password: "operator-password-1" }))
        .status,
      200,
    );
    assert.equal((await op.json("/console/api/me")).body.inbox, false);
    const inbox = await op.json("/console/api/inbox");
    assert.equal(inbox.status, 404);
    assert.equal(srv.services.mailer.inbox, null);
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("console: an operator with a verified factor needs it to get in", async () => {
  const clock = new TestClock();
  const srv = await startTestServer(ON, { clock });
  try {
    const email = uniqueEmail("op-mfa");
    await createUser(srv, email, "operator-password-1", "supabase_admin");
    // The operator enrolls and verifies a TOTP factor with their own session.
    const grant = await srv.fetch("/token?grant_type=password", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: "operator-password-1" }),
    });
    const { access_token } = await grant.json();
    const enrolled = await api(srv, "POST", "/factors", access_token, {
      factor_type: "totp",
      friendly_name: "phone app",
    });
    assert.equal(enrolled.status, 200);
    const factorId = enrolled.body.id as string;
    const secret = (enrolled.body.totp as Record<string, string>).secret;
    const ch = await api(srv, "POST", `/factors/${factorId}/challenge`, access_token, {});
    const ok = await api(srv, "POST", `/factors/${factorId}/verify`, access_token, {
      challenge_id: ch.body.id,
      code: totpAt(secret, clock.ms),
    });
    assert.equal(ok.status, 200);

    const op = new Client(srv);
    await (await op.fetch("/console/")).body?.cancel();
    const first = await op.json("/console/api/login", "POST", {
      email,
      password: "operator-password-1",
    });
    assert.equal(first.status, 200);
    assert.equal(first.body.mfa_required, true);
    assert.deepEqual(first.body.factors.map((f: { id: string }) => f.id), [factorId]);
    // Half signed in opens nothing.
    assert.equal(op.cookies.has("authsvc_console_at"), false);
    assert.equal((await op.json("/console/api/me")).status, 401);
    assert.equal((await op.json("/console/api/gotrue/admin/users")).status, 401);

    clock.advance(60);
    const c1 = await op.json("/console/api/mfa/challenge", "POST", { factor_id: factorId });
    assert.equal(c1.status, 200);
    const bad = await op.json("/console/api/mfa/verify", "POST", {
      factor_id: factorId,
      challenge_id: c1.body.id,
      code: totpAt(secret, clock.ms - 3_600_000),
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error_code, "mfa_verification_failed");
    assert.equal((await op.json("/console/api/me")).status, 401);

    const c2 = await op.json("/console/api/mfa/challenge", "POST", { factor_id: factorId });
    const good = await op.json("/console/api/mfa/verify", "POST", {
      factor_id: factorId,
      challenge_id: c2.body.id,
      code: totpAt(secret, clock.ms),
    });
    assert.equal(good.status, 200, JSON.stringify(good.body));
    assert.equal(op.cookies.has("authsvc_console_mfa"), false);
    const me = await op.json("/console/api/me");
    assert.equal(me.status, 200);
    assert.equal(me.body.email, email);
    assert.equal((await op.json("/console/api/gotrue/admin/users")).status, 200);
  } finally {
    await srv.close();
  }
});

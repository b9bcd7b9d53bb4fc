/**
 * Account decisions of external sign-ins: a provider identity reaches an
 * existing account only through an address the provider verified; an
 * unconfirmed account squatting that address loses its password; sign-ups
 * can be disabled; banned users stay out; events and audit entries are
 * written.
 */
import assert from "node:assert/strict";
import { startSmtp } from "../../helpers/smtp.ts";
import { postJson, startTestServer } from "../../helpers/server.ts";
import {
  defaultUser,
  getUser,
  type Json,
  land,
  redirectOf,
  serverWithFakes,
  signIn,
} from "./_helpers.ts";

const PASSWORD = "correct-horse-battery-9";

Deno.test("a verified address links the provider to the existing account, with a notification", async () => {
  const smtp = await startSmtp();
  const env = await serverWithFakes(["github"], {
    ...smtp.env,
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_LINKED_ENABLED: "true",
  });
  try {
    const email = `owner-${crypto.randomUUID().slice(0, 6)}@example.org`;
    const signup = await postJson(env.srv, "/signup", { email, password: PASSWORD });
    assert.equal(signup.status, 200);
    const userId = (signup.body.user as Json).id;

    env.fakes.github.user = defaultUser({ email: email.toUpperCase() }); // case does not matter
    const l = await signIn(env.srv, env.fakes.github);
    const me = await getUser(env.srv, l.hash.get("access_token")!);
    assert.equal(me.body.id, userId, "the same account");
    const providers = ((me.body.app_metadata as Json).providers as string[]).sort();
    assert.deepEqual(providers, ["email", "github"]);
    assert.equal((me.body.identities as Json[]).length, 2);
    const mail = await smtp.waitForMail(email, { subject: /identity/i });
    assert.match(mail.text, /github/);

    const audit = await env.srv.db.query<{ payload: Json }>(
      `SELECT payload FROM ${env.srv.db.t("audit_log_entries")} WHERE payload->>'actor_id' = $1`,
      [userId],
    );
    const actions = audit.map((r) => r.payload.action);
    assert.ok(actions.includes("identity_linked"), actions.join());
    assert.ok(actions.includes("login"), actions.join());

    // The password still works: linking added a way in, it took none away.
    const pw = await postJson(env.srv, "/token?grant_type=password", { email, password: PASSWORD });
    assert.equal(pw.status, 200);
  } finally {
    await env.close();
    await smtp.close();
  }
});

Deno.test("an unverified address never reaches an existing account", async () => {
  const env = await serverWithFakes(["github", "discord"], { AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const email = `victim-${crypto.randomUUID().slice(0, 6)}@example.org`;
    const signup = await postJson(env.srv, "/signup", { email, password: PASSWORD });
    const token = signup.body.access_token as string;
    for (const name of ["github", "discord"]) {
      env.fakes[name].user = defaultUser({ email, emailVerified: false });
      const l = await signIn(env.srv, env.fakes[name]);
      assert.equal(l.hash.get("access_token"), null, name);
      assert.equal(l.hash.get("error_code"), "provider_email_needs_verification");
    }
    const me = await getUser(env.srv, token);
    assert.equal((me.body.identities as Json[]).length, 1, "no identity was added");
    const rows = await env.srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${env.srv.db.t("identities")} i
       JOIN ${env.srv.db.t("users")} u ON u.id = i.user_id WHERE u.email = $1`,
      [email],
    );
    assert.equal(rows[0].n, 1);
  } finally {
    await env.close();
  }
});

Deno.test("an unconfirmed account squatting an address loses its password to the verified owner", async () => {
  const env = await serverWithFakes(["google"]);
  try {
    const email = `taken-${crypto.randomUUID().slice(0, 6)}@example.org`;
    const squat = await postJson(env.srv, "/signup", { email, password: PASSWORD });
    assert.equal(squat.status, 200);
    const squatterId = squat.body.id ?? (squat.body.user as Json | undefined)?.id;

    env.fakes.google.user = defaultUser({ email });
    const l = await signIn(env.srv, env.fakes.google);
    const me = await getUser(env.srv, l.hash.get("access_token")!);
    assert.equal(me.body.id, squatterId, "the row is reused");
    assert.ok(me.body.email_confirmed_at, "the provider proved the address");
    assert.deepEqual((me.body.identities as Json[]).map((i) => i.provider), ["google"]);
    const pw = await postJson(env.srv, "/token?grant_type=password", { email, password: PASSWORD });
    assert.equal(pw.status, 400, "the squatter's password is gone");
  } finally {
    await env.close();
  }
});

Deno.test("DISABLE_SIGNUP keeps new users out; banned users stay out", async () => {
  const open = await serverWithFakes(["gitlab"]);
  try {
    const fake = open.fakes.gitlab;
    fake.user = defaultUser();
    const first = await signIn(open.srv, fake);
    const me = await getUser(open.srv, first.hash.get("access_token")!);
    await open.srv.db.query(
      `UPDATE ${open.srv.db.t("users")} SET banned_until = now() + interval '1 day' WHERE id = $1`,
      [me.body.id],
    );
    const banned = await signIn(open.srv, fake);
    assert.equal(banned.hash.get("error"), "access_denied");
    assert.equal(banned.hash.get("error_code"), "user_banned");
  } finally {
    await open.close();
  }
  const closed = await serverWithFakes(["gitlab"], { AUTHSVC_DISABLE_SIGNUP: "true" });
  try {
    closed.fakes.gitlab.user = defaultUser();
    const l = await signIn(closed.srv, closed.fakes.gitlab);
    assert.equal(l.hash.get("error"), "access_denied");
    assert.equal(l.hash.get("error_code"), "signup_disabled");
    const n = await closed.srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${closed.srv.db.t("users")}`,
    );
    assert.equal(n[0].n, 0);
  } finally {
    await closed.close();
  }
});

Deno.test("signup and signin events, audit entries and the amr of the session", async () => {
  const env = await serverWithFakes(["twitch"]);
  try {
    const events: [string, Json][] = [];
    for (const name of ["signup", "signin"]) {
      env.srv.services.events.on(name, (a) => events.push([name, a]));
    }
    env.fakes.twitch.user = defaultUser();
    const l = await signIn(env.srv, env.fakes.twitch);
    await signIn(env.srv, env.fakes.twitch);
    assert.deepEqual(events, [
      ["signup", { method: "oauth", provider: "twitch" }],
      ["signin", { method: "oauth", provider: "twitch" }],
      ["signin", { method: "oauth", provider: "twitch" }],
    ]);
    const claims = JSON.parse(
      atob(l.hash.get("access_token")!.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
    );
    assert.equal(claims.amr[0].method, "oauth");
    assert.equal(claims.amr[0].provider, "twitch");
    assert.equal(claims.app_metadata.provider, "twitch");
    const rows = await env.srv.db.query<{ payload: Json }>(
      `SELECT payload FROM ${env.srv.db.t("audit_log_entries")} WHERE payload->>'actor_id' = $1
       ORDER BY created_at`,
      [claims.sub],
    );
    assert.deepEqual(rows.map((r) => r.payload.action), ["user_signedup", "login"]);
    assert.deepEqual((rows[0].payload.traits as Json).provider, "twitch");
  } finally {
    await env.close();
  }
});

Deno.test("an unverified provider address gets a confirmation mail; once confirmed, sign-in works", async () => {
  const smtp = await startSmtp();
  const env = await serverWithFakes(["spotify"], smtp.env);
  try {
    const fake = env.fakes.spotify; // Spotify never verifies addresses
    fake.user = defaultUser();
    const first = await signIn(env.srv, fake, {
      query: { redirect_to: "http://localhost:3000/in" },
    });
    assert.equal(first.hash.get("error_code"), "provider_email_needs_verification");
    assert.match(first.hash.get("error_description")!, /confirmation email has been sent/);
    const mail = await smtp.waitForMail(fake.user.email!, { subject: /Confirm/ });
    const link = new URL(mail.link);
    const res = await env.srv.fetch(`${link.pathname}${link.search}`, { redirect: "manual" });
    await res.body?.cancel();
    assert.ok([302, 303].includes(res.status), `verify answered ${res.status}`);
    assert.ok(!new URL(res.headers.get("location")!).hash.includes("error"));

    const second = await signIn(env.srv, fake);
    assert.equal(second.hash.get("error"), null, second.hash.get("error_description") ?? "");
    const me = await getUser(env.srv, second.hash.get("access_token")!);
    assert.equal(me.body.email, fake.user.email);
    assert.ok(me.body.email_confirmed_at);
    assert.ok((me.body.identities as Json[]).some((i) => i.provider === "spotify"));
  } finally {
    await env.close();
    await smtp.close();
  }
});

Deno.test("a verified secondary address links too; an unverified secondary one does not", async () => {
  const env = await serverWithFakes(["gitlab", "bitbucket"], {
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
  });
  try {
    const work = `work-${crypto.randomUUID().slice(0, 6)}@example.org`;
    const signup = await postJson(env.srv, "/signup", { email: work, password: PASSWORD });
    const userId = (signup.body.user as Json).id;

    // Bitbucket lists the work address unconfirmed: no link; its verified primary address
    // belongs to nobody, so a new account is made for it.
    env.fakes.bitbucket.user = defaultUser({ extraEmails: [{ email: work, verified: false }] });
    const b = await signIn(env.srv, env.fakes.bitbucket);
    const other = await getUser(env.srv, b.hash.get("access_token")!);
    assert.notEqual(other.body.id, userId);

    // GitLab lists it confirmed: the GitLab account joins the existing user.
    env.fakes.gitlab.user = defaultUser({ extraEmails: [{ email: work, verified: true }] });
    const g = await signIn(env.srv, env.fakes.gitlab);
    const me = await getUser(env.srv, g.hash.get("access_token")!);
    assert.equal(me.body.id, userId);
    assert.equal(me.body.email, work, "the account keeps its own address");
  } finally {
    await env.close();
  }
});

Deno.test("two first sign-ins of one provider account at once make one user, both signed in", async () => {
  const env = await serverWithFakes(["gitlab"]);
  try {
    const fake = env.fakes.gitlab;
    fake.user = defaultUser();
    // Two tabs: two /authorize, two consents, both callbacks arrive together.
    const cbs = [];
    for (let i = 0; i < 2; i++) {
      const to = await redirectOf(env.srv, "/authorize?provider=gitlab");
      cbs.push(await fake.approve(to.href));
    }
    const landings = await Promise.all(cbs.map((cb) => land(env.srv, cb)));
    const ids = new Set<unknown>();
    for (const l of landings) {
      assert.equal(l.hash.get("error"), null, l.hash.get("error_description") ?? "");
      ids.add((await getUser(env.srv, l.hash.get("access_token")!)).body.id);
    }
    assert.equal(ids.size, 1, "one user");
    const n = await env.srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${env.srv.db.t("identities")} WHERE provider = 'gitlab'`,
    );
    assert.equal(n[0].n, 1);
  } finally {
    await env.close();
  }
});

Deno.test("linking one provider account twice at once links it once; the other says so", async () => {
  const env = await serverWithFakes(["gitlab", "github"]);
  try {
    env.fakes.gitlab.user = defaultUser();
    const first = await signIn(env.srv, env.fakes.gitlab);
    const token = first.hash.get("access_token")!;
    env.fakes.github.user = defaultUser();
    const cbs = [];
    for (let i = 0; i < 2; i++) {
      const to = await redirectOf(env.srv, "/user/identities/authorize?provider=github", {
        headers: { authorization: `Bearer ${token}` },
      });
      cbs.push(await env.fakes.github.approve(to.href));
    }
    const landings = await Promise.all(cbs.map((cb) => land(env.srv, cb)));
    const codes = landings.map((l) => l.hash.get("error_code")).sort();
    assert.deepEqual(codes, ["identity_already_exists", null].sort());
    const me = await getUser(env.srv, token);
    const providers = (me.body.identities as Json[]).map((i) => i.provider).sort();
    assert.deepEqual(providers, ["github", "gitlab"]);
  } finally {
    await env.close();
  }
});

Deno.test("manual linking is off by default: /user/identities answers 404 manual_linking_disabled", async () => {
  // No AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: the default, off as in GoTrue.
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const r = await postJson(srv, "/signup", {
      email: `link-off-${crypto.randomUUID()}@example.com`,
      password: "secret-pw-1",
    });
    const token = String(r.body.access_token ?? "");
    assert.ok(token, JSON.stringify(r.body));
    const headers = { authorization: `Bearer ${token}` };
    for (
      const [method, path] of [
        ["GET", "/user/identities/authorize?provider=github&skip_http_redirect=true"],
        ["DELETE", `/user/identities/${crypto.randomUUID()}`],
      ]
    ) {
      const res = await srv.fetch(path, { method, headers });
      const body = await res.json();
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(body.error_code, "manual_linking_disabled");
      assert.equal(body.msg, "Manual linking is disabled");
      // Authentication comes first, as in GoTrue.
      const anon = await srv.fetch(path, { method });
      await anon.body?.cancel();
      assert.equal(anon.status, 401, `${method} ${path} without a token`);
    }
  } finally {
    await srv.close();
  }
});

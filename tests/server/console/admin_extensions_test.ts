/**
 * The admin API calls the console added (our extensions, docs/console.md):
 * keyset pages of users, a user's sessions (list, sign out everywhere) and the
 * audit log's filters. Each is tried as an operator would, and with bad input.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";

type Json = Record<string, unknown>;

async function admin(srv: TestServer, method: string, path: string, body?: unknown) {
  const res = await srv.fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${await srv.serviceRoleToken()}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json, headers: res.headers };
}

async function signIn(srv: TestServer, email: string, password: string, ua: string) {
  const res = await srv.fetch("/token?grant_type=password", {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": ua },
    body: JSON.stringify({ email, password }),
  });
  assert.equal(res.status, 200);
  return await res.json() as { access_token: string; refresh_token: string };
}

Deno.test("GET /admin/users?after=: keyset pages cover every match once, newest first", async () => {
  const srv = await startTestServer({});
  try {
    const tag = crypto.randomUUID().slice(0, 8);
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await admin(srv, "POST", "/admin/users", { email: `page${i}-${tag}@example.com` });
      assert.equal(r.status, 200);
      made.push(r.body.id as string);
    }
    await admin(srv, "POST", "/admin/users", { email: `other-${tag}@example.org` });
    const seen: string[] = [];
    let after = "";
    let pages = 0;
    for (;;) {
      const r = await admin(
        srv,
        "GET",
        `/admin/users?per_page=3&filter=-${tag}@example.com&after=${after}`,
      );
      assert.equal(r.status, 200);
      assert.equal(r.headers.get("x-total-count"), null, "no count in keyset mode");
      seen.push(...(r.body.users as Json[]).map((u) => u.id as string));
      pages++;
      const next = r.headers.get("x-next-cursor");
      if (!next) break;
      after = encodeURIComponent(next);
    }
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...made].reverse(), "all seven, newest first, none twice");

    for (const bad of ["nonsense", btoa("2026-01-01T00:00:00Z_not-a-uuid")]) {
      const r = await admin(srv, "GET", `/admin/users?after=${encodeURIComponent(bad)}`);
      assert.equal(r.status, 400, bad);
      assert.match(String(r.body.msg), /after must be a cursor/);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("admin sessions: listed with user agent and IP; DELETE signs out everywhere", async () => {
  const srv = await startTestServer({});
  try {
    const email = `sessions-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const created = await admin(srv, "POST", "/admin/users", {
      email,
      password: "sessions-password-1",
      email_confirm: true,
    });
    const id = created.body.id as string;
    const laptop = await signIn(srv, email, "sessions-password-1", "Laptop/1.0");
    await signIn(srv, email, "sessions-password-1", "Phone/2.0");

    const list = await admin(srv, "GET", `/admin/users/${id}/sessions`);
    assert.equal(list.status, 200);
    const sessions = list.body.sessions as Json[];
    assert.deepEqual(sessions.map((s) => s.user_agent).sort(), ["Laptop/1.0", "Phone/2.0"]);
    assert.ok(sessions.every((s) => s.ip === "127.0.0.1"));

    // Not an admin: refused.
    const own = await srv.fetch(`/admin/users/${id}/sessions`, {
      headers: { authorization: `Bearer ${laptop.access_token}` },
    });
    assert.equal(own.status, 403);
    await own.body?.cancel();

    const ended = await admin(srv, "DELETE", `/admin/users/${id}/sessions`);
    assert.equal(ended.status, 200);
    assert.deepEqual((await admin(srv, "GET", `/admin/users/${id}/sessions`)).body.sessions, []);
    const refresh = await srv.fetch("/token?grant_type=refresh_token", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: laptop.refresh_token }),
    });
    assert.equal(refresh.status, 400, "the refresh token died with its session");
    await refresh.body?.cancel();
    const user = await srv.fetch("/user", {
      headers: { authorization: `Bearer ${laptop.access_token}` },
    });
    assert.equal(user.status, 403);
    assert.equal((await user.json()).error_code, "session_not_found");

    const audit = await admin(srv, "GET", `/admin/audit?user_id=${id}&action=logout`);
    assert.equal(audit.status, 200);
    const entries = audit.body as unknown as Json[];
    assert.equal(entries.length, 1);
    assert.equal((entries[0].payload as Json).action, "logout");

    const missing = await admin(srv, "GET", `/admin/users/${crypto.randomUUID()}/sessions`);
    assert.equal(missing.status, 404);
  } finally {
    await srv.close();
  }
});

Deno.test("GET /admin/audit: user_id, actor, action and time filters; bad values are 400", async () => {
  const srv = await startTestServer({});
  try {
    const email = `audited-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const made = await admin(srv, "POST", "/admin/users", {
      email,
      password: "audited-password-1",
      email_confirm: true,
    });
    const id = made.body.id as string;
    await signIn(srv, email, "audited-password-1", "Test/1");
    await admin(srv, "PUT", `/admin/users/${id}`, { user_metadata: { a: 1 } });
    const other = await admin(srv, "POST", "/admin/users", {
      email: `bystander-${crypto.randomUUID().slice(0, 8)}@example.com`,
    });
    assert.equal(other.status, 200);

    const actions = async (qs: string) => {
      const r = await admin(srv, "GET", `/admin/audit?${qs}`);
      assert.equal(r.status, 200, qs);
      return (r.body as unknown as Json[]).map((e) => (e.payload as Json).action);
    };
    // By or about the user: their sign-up (by the admin), login, and the admin's change.
    assert.deepEqual(await actions(`user_id=${id}`), ["user_modified", "login", "user_signedup"]);
    assert.deepEqual(await actions(`user_id=${id}&action=login`), ["login"]);
    assert.deepEqual(await actions(`actor=${encodeURIComponent(email)}`), ["login"]);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    assert.deepEqual(await actions(`user_id=${id}&since=${future}`), []);
    assert.deepEqual((await actions(`user_id=${id}&until=${future}`)).length, 3);

    for (
      const bad of [
        "user_id=nope",
        "since=yesterday",
        "until=2026-13-45",
        `action=${"x".repeat(300)}`,
      ]
    ) {
      const r = await admin(srv, "GET", `/admin/audit?${bad}`);
      assert.equal(r.status, 400, bad);
    }
  } finally {
    await srv.close();
  }
});

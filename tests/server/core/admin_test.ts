import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { passwordGrant, refreshGrant, signUpSession } from "./_helpers.ts";
import { bearer, call, uniqueEmail } from "../../helpers/http.ts";

async function admin(srv: TestServer, method: string, path: string, body?: unknown) {
  return await call(srv, method, path, {
    body: body,
    headers: bearer(await srv.serviceRoleToken()),
  });
}

Deno.test("admin create, get, update, ban, unban and delete users", async () => {
  const srv = await startTestServer({});
  try {
    const a = uniqueEmail("adm");
    let r = await admin(srv, "POST", "/admin/users", {
      email: a,
      password: "secret-pw-1",
      email_confirm: true,
      user_metadata: { name: "Ann" },
      app_metadata: { plan: "pro", provider: "ignored" },
      role: "editor",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const id = r.body.id as string;
    assert.equal(r.body.email, a);
    assert.equal(r.body.role, "editor");
    assert.ok(r.body.email_confirmed_at);
    assert.deepEqual(r.body.app_metadata, { plan: "pro", provider: "email", providers: ["email"] });
    assert.equal((r.body.identities as unknown[]).length, 1);

    r = await admin(srv, "POST", "/admin/users", { email: a, password: "secret-pw-1" });
    assert.equal(r.status, 422);
    assert.equal(r.body.error_code, "email_exists");

    const signIn = await passwordGrant(srv, { email: a, password: "secret-pw-1" });
    assert.equal(signIn.status, 200);
    const claims = JSON.parse(atob((signIn.body.access_token as string).split(".")[1]));
    assert.equal(claims.role, "editor");

    r = await admin(srv, "GET", `/admin/users/${id}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.id, id);

    r = await admin(srv, "PUT", `/admin/users/${id}`, {
      user_metadata: { name: null, age: 3 },
      app_metadata: { plan: "free" },
      phone: "+44 20 7946 0000",
      phone_confirm: true,
      ban_duration: "1h30m",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.user_metadata, { age: 3 });
    assert.equal((r.body.app_metadata as { plan: string }).plan, "free");
    assert.deepEqual((r.body.app_metadata as { providers: string[] }).providers.sort(), [
      "email",
      "phone",
    ]);
    assert.equal(r.body.phone, "442079460000");
    assert.ok(r.body.banned_until);
    const banned = await passwordGrant(srv, { email: a, password: "secret-pw-1" });
    assert.equal(banned.status, 400);
    assert.equal(banned.body.error_code, "user_banned");
    // the ban ended the user's sessions at once (issue 17): their refresh tokens are gone
    const noRefresh = await refreshGrant(srv, signIn.body.refresh_token as string);
    assert.equal(noRefresh.status, 400);
    assert.equal(noRefresh.body.error_code, "refresh_token_not_found");

    r = await admin(srv, "PUT", `/admin/users/${id}`, { ban_duration: "none" });
    assert.equal(r.body.banned_until, undefined);
    assert.equal((await passwordGrant(srv, { email: a, password: "secret-pw-1" })).status, 200);

    r = await admin(srv, "PUT", `/admin/users/${id}`, { password: "changed-pw-2" });
    assert.equal(r.status, 200);
    assert.equal((await passwordGrant(srv, { email: a, password: "changed-pw-2" })).status, 200);

    r = await admin(srv, "DELETE", `/admin/users/${id}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {});
    r = await admin(srv, "GET", `/admin/users/${id}`);
    assert.equal(r.status, 404);
    assert.equal(r.body.error_code, "user_not_found");
    assert.equal((await passwordGrant(srv, { email: a, password: "changed-pw-2" })).status, 400);
  } finally {
    await srv.close();
  }
});

Deno.test("admin POST /admin/users/<id> creates with that id, then updates; soft delete frees the address", async () => {
  const srv = await startTestServer({});
  try {
    const id = crypto.randomUUID();
    const a = uniqueEmail("byid");
    let r = await admin(srv, "POST", `/admin/users/${id}`, { email: a, email_confirm: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.id, id);
    r = await admin(srv, "POST", `/admin/users/${id}`, { role: "editor" });
    assert.equal(r.status, 200);
    assert.equal(r.body.role, "editor");
    assert.equal(r.body.email, a);

    r = await admin(srv, "DELETE", `/admin/users/${id}`, { should_soft_delete: true });
    assert.equal(r.status, 200);
    assert.equal((await admin(srv, "GET", `/admin/users/${id}`)).status, 404);
    r = await admin(srv, "POST", "/admin/users", { email: a });
    assert.equal(r.status, 200);
    assert.notEqual(r.body.id, id);
  } finally {
    await srv.close();
  }
});

Deno.test("admin imports bcrypt and argon2 hashes; sign-in rehashes them to bcrypt cost 10", async () => {
  const srv = await startTestServer({});
  try {
    // both hashes of "password": PHP's $2y$ bcrypt at cost 4, and argon2id
    const bcrypt2y = "$2y$04$/uaF/uaF/uaF/uaF/uaF/uDoLTv0.GKuyIUIWMpfQvuOZKorP5RFK";
    const argon2id = "$argon2id$v=19$m=16,t=2,p=1$c29tZXNhbHRzYWx0$QCnDQmg7/BaoPZBy+6fY7A";
    let r;
    for (const hash of [bcrypt2y, argon2id]) {
      const a = uniqueEmail("imp");
      r = await admin(srv, "POST", "/admin/users", {
        email: a,
        password_hash: hash,
        email_confirm: true,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal((await passwordGrant(srv, { email: a, password: "wrong" })).status, 400);
      const signIn = await passwordGrant(srv, { email: a, password: "password" });
      assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
      const row = await srv.services.users.findByEmail(a);
      assert.match(row!.encrypted_password!, /^\$2[ab]\$10\$/);
      assert.equal((await passwordGrant(srv, { email: a, password: "password" })).status, 200);
    }

    r = await admin(srv, "POST", "/admin/users", {
      email: uniqueEmail("u"),
      password_hash: "md5:abc",
    });
    assert.equal(r.status, 400);
    assert.match(String(r.body.msg), /password_hash/);
    r = await admin(srv, "POST", "/admin/users", {
      email: uniqueEmail("u"),
      password: "secret-pw-1",
      password_hash: bcrypt2y,
    });
    assert.equal(r.status, 400);
  } finally {
    await srv.close();
  }
});

Deno.test("admin list pages with X-Total-Count and Link, filters by e-mail", async () => {
  const srv = await startTestServer({});
  try {
    const tag = `pg${crypto.randomUUID().slice(0, 6)}`;
    for (let i = 0; i < 5; i++) {
      const r = await admin(srv, "POST", "/admin/users", { email: `${tag}-${i}@example.com` });
      assert.equal(r.status, 200);
    }
    await admin(srv, "POST", "/admin/users", { email: "someone-else@example.org" });
    let r = await admin(srv, "GET", "/admin/users?page=1&per_page=2");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-total-count"), "6");
    assert.equal((r.body.users as unknown[]).length, 2);
    assert.equal(r.body.aud, "authenticated");
    const link = r.headers.get("link")!;
    assert.match(link, /<[^>]*\/admin\/users\?page=2&per_page=2>; rel="next"/);
    assert.match(link, /<[^>]*\/admin\/users\?page=3&per_page=2>; rel="last"/);
    r = await admin(srv, "GET", "/admin/users?page=3&per_page=2");
    assert.ok(!r.headers.get("link")!.includes('rel="next"'));

    r = await admin(srv, "GET", `/admin/users?filter=${tag}`);
    assert.equal(r.headers.get("x-total-count"), "5");
    for (const u of r.body.users as { email: string }[]) assert.ok(u.email.startsWith(tag));

    r = await admin(srv, "GET", "/admin/users?page=0");
    assert.equal(r.status, 400);
    assert.match(String(r.body.msg), /page/);
  } finally {
    await srv.close();
  }
});

Deno.test("admin endpoints refuse non-admins and name bad input", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const user = await signUpSession(srv);
    let r = await call(srv, "GET", "/admin/users", { headers: bearer(user.access_token) });
    assert.equal(r.status, 403);
    assert.equal(r.body.error_code, "not_admin");
    r = await call(srv, "GET", "/admin/users");
    assert.equal(r.status, 401);
    r = await admin(srv, "GET", "/admin/users/not-a-uuid");
    assert.equal(r.status, 400);
    assert.match(String(r.body.msg), /user_id/);
    r = await admin(srv, "GET", `/admin/users/${crypto.randomUUID()}`);
    assert.equal(r.status, 404);
    r = await admin(srv, "PUT", `/admin/users/${crypto.randomUUID()}`, { role: "x" });
    assert.equal(r.status, 404);
    for (const ban of ["forever", "9999999999h", "-1h"]) {
      // beyond Go's longest duration (2562047h) is refused like GoTrue does, not a 500
      r = await admin(srv, "POST", "/admin/users", { email: uniqueEmail("u"), ban_duration: ban });
      assert.equal(r.status, 400, ban);
      assert.match(String(r.body.msg), /ban_duration/);
    }
    r = await admin(srv, "POST", "/admin/users", {
      email: uniqueEmail("u"),
      ban_duration: "876000h",
    });
    assert.equal(r.status, 200); // a hundred years, the usual "for good"
    assert.ok(Date.parse(String(r.body.banned_until)) > Date.now() + 99 * 365 * 86400_000);
    r = await admin(srv, "POST", "/admin/users", { email: uniqueEmail("u"), email_confirm: "yes" });
    assert.equal(r.status, 400);
    assert.match(String(r.body.msg), /email_confirm/);
    r = await admin(srv, "POST", "/admin/users", { email: uniqueEmail("u"), user_metadata: [1] });
    assert.match(String(r.body.msg), /user_metadata/);
    r = await admin(srv, "POST", "/admin/users", {});
    assert.equal(r.status, 400); // GoTrue's adminUserCreate
    const del = await srv.fetch(`/admin/users/${crypto.randomUUID()}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await srv.serviceRoleToken()}` },
      body: "{oops",
    });
    assert.equal(del.status, 400);
    assert.equal((await del.json()).error_code, "bad_json");
    r = await admin(srv, "POST", "/admin/users", { email: uniqueEmail("u"), id: "nope" });
    assert.match(String(r.body.msg), /ID must conform to the uuid v4 format/);
    r = await admin(srv, "POST", "/admin/users", { phone: "12" + "3".repeat(20) });
    assert.equal(r.status, 422);
    assert.match(String(r.body.msg), /phone/);
  } finally {
    await srv.close();
  }
});

import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

type Entry = {
  id: string;
  payload: Record<string, unknown>;
  created_at: string;
  ip_address: string;
};

Deno.test("GET /admin/audit: admins page through the audit log, others are refused", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const addresses = [uniqueEmail("a1"), uniqueEmail("a2"), uniqueEmail("a3")];
    let userToken = "";
    for (const address of addresses) {
      const r = await call(srv, "POST", "/signup", {
        body: { email: address, password: "pw-123456" },
      });
      assert.equal(r.status, 200);
      userToken = String(r.body.access_token);
    }
    const admin = { authorization: `Bearer ${await srv.serviceRoleToken()}` };

    const anonymous = await call(srv, "GET", "/admin/audit");
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error_code, "no_authorization");
    const user = await call(srv, "GET", "/admin/audit", {
      headers: {
        authorization: `Bearer ${userToken}`,
      },
    });
    assert.equal(user.status, 403);
    assert.equal(user.body.error_code, "not_admin");

    const all = await call(srv, "GET", "/admin/audit", { headers: admin });
    assert.equal(all.status, 200);
    const entries = all.body as unknown as Entry[];
    const total = Number(all.headers.get("x-total-count"));
    assert.equal(entries.length, total);
    const signups = entries.filter((e) => e.payload.action === "user_signedup");
    assert.equal(signups.length, 3);
    assert.deepEqual(
      new Set(
        signups.map((e) =>
          (e.payload.traits as { user_email?: string })?.user_email ?? e.payload.actor_username
        ),
      ),
      new Set(addresses),
    );
    assert.equal(signups[0].ip_address, "127.0.0.1");
    assert.ok(!Number.isNaN(Date.parse(signups[0].created_at)));
    // Newest first.
    const times = entries.map((e) => Date.parse(e.created_at));
    assert.deepEqual(times, [...times].sort((a, b) => b - a));

    const page1 = await call(srv, "GET", "/admin/audit?per_page=2", { headers: admin });
    assert.equal((page1.body as unknown as Entry[]).length, 2);
    const link = page1.headers.get("link") ?? "";
    const last = Math.ceil(total / 2);
    assert.match(link, /<\/admin\/audit\?page=2&per_page=2>; rel="next"/);
    assert.ok(link.includes(`</admin/audit?page=${last}&per_page=2>; rel="last"`), link);
    const page2 = await call(srv, "GET", "/admin/audit?page=2&per_page=2", { headers: admin });
    const ids1 = (page1.body as unknown as Entry[]).map((e) => e.id);
    const ids2 = (page2.body as unknown as Entry[]).map((e) => e.id);
    assert.ok(ids2.length >= 1 && ids2.every((id) => !ids1.includes(id)));

    const filtered = await call(srv, "GET", "/admin/audit?query=action:user_signedup", {
      headers: admin,
    });
    assert.equal(Number(filtered.headers.get("x-total-count")), 3);
    assert.ok(
      (filtered.body as unknown as Entry[]).every((e) => e.payload.action === "user_signedup"),
    );

    const badScope = await call(srv, "GET", "/admin/audit?query=color:red", { headers: admin });
    assert.equal(badScope.status, 400);
    assert.match(String(badScope.body.msg), /query scope/);
    const badPage = await call(srv, "GET", "/admin/audit?page=zero", { headers: admin });
    assert.equal(badPage.status, 400);
    assert.match(String(badPage.body.msg), /page/);
  } finally {
    await srv.close();
  }
});

Deno.test("audit log: every flow writes its entry (sign-up, sign-in, refresh, reuse, user and admin changes, logout)", async () => {
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "0",
    AUTHSVC_SECURITY_SB_FORWARDED_FOR_ENABLED: "true",
  });
  const from = { "authsvc-proxy-forwarded-for": "198.51.100.23" };
  try {
    const address = uniqueEmail("flow");
    const up = await call(srv, "POST", "/signup", {
      body: { email: address, password: "pw-123456" },
      headers: from,
    });
    assert.equal(up.status, 200);
    const inn = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: address,
        password: "pw-123456",
      },
      headers: from,
    });
    assert.equal(inn.status, 200);
    const auth = { ...from, authorization: `Bearer ${inn.body.access_token}` };
    assert.equal(
      (await call(srv, "PUT", "/user", { body: { data: { theme: "dark" } }, headers: auth }))
        .status,
      200,
    );
    assert.equal(
      (await call(srv, "PUT", "/user", { body: { password: "pw-654321" }, headers: auth })).status,
      200,
    );
    const ref = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: inn.body.refresh_token,
      },
      headers: from,
    });
    assert.equal(ref.status, 200);
    const ref2 = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: { refresh_token: ref.body.refresh_token },
      headers: from,
    });
    assert.equal(ref2.status, 200);
    // The first token again, two generations back and outside the reuse interval (0): the
    // session's tokens are revoked.
    const reuse = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: inn.body.refresh_token,
      },
      headers: from,
    });
    assert.equal(reuse.body.error_code, "refresh_token_already_used");
    const second = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: address,
        password: "pw-654321",
      },
      headers: from,
    });
    const out = await call(srv, "POST", "/logout", {
      headers: {
        ...from,
        authorization: `Bearer ${second.body.access_token}`,
      },
    });
    assert.equal(out.status, 204);

    const admin = { ...from, authorization: `Bearer ${await srv.serviceRoleToken()}` };
    const other = uniqueEmail("byadmin");
    const created = await call(srv, "POST", "/admin/users", {
      body: { email: other },
      headers: admin,
    });
    assert.equal(created.status, 200);
    const uid = String(created.body.id);
    assert.equal(
      (await call(srv, "PUT", `/admin/users/${uid}`, {
        body: { user_metadata: { a: 1 } },
        headers: admin,
      })).status,
      200,
    );
    assert.equal(
      (await call(srv, "DELETE", `/admin/users/${uid}`, { headers: admin })).status,
      200,
    );
    const invited = uniqueEmail("invited");
    assert.equal(
      (await call(srv, "POST", "/invite", { body: { email: invited }, headers: admin })).status,
      200,
    );

    const list = await call(srv, "GET", "/admin/audit?per_page=1000", { headers: admin });
    const entries = list.body as unknown as Entry[];
    const has = (action: string, who: string) =>
      entries.find((e) => e.payload.action === action && JSON.stringify(e.payload).includes(who));
    for (
      const [action, who] of [
        ["user_signedup", address],
        ["login", address],
        ["token_refreshed", address],
        ["token_revoked", address],
        ["user_modified", address],
        ["user_updated_password", address],
        ["logout", address],
        ["user_signedup", other],
        ["user_modified", other],
        ["user_deleted", other],
        ["user_invited", invited],
      ]
    ) {
      const e = has(action, who);
      assert.ok(e, `no ${action} entry for ${who}`);
      assert.equal(e.ip_address, "198.51.100.23", `${action}: the client IP`);
    }
  } finally {
    await srv.close();
  }
});

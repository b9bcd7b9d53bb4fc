import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { email, send } from "./_fakes.ts";

type Entry = {
  id: string;
  payload: Record<string, unknown>;
  created_at: string;
  ip_address: string;
};

Deno.test("GET /admin/audit: admins page through the audit log, others are refused", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const addresses = [email("a1"), email("a2"), email("a3")];
    let userToken = "";
    for (const address of addresses) {
      const r = await send(srv, "POST", "/signup", { email: address, password: "pw-123456" });
      assert.equal(r.status, 200);
      userToken = String(r.body.access_token);
    }
    const admin = { authorization: `Bearer ${await srv.serviceRoleToken()}` };

    const anonymous = await send(srv, "GET", "/admin/audit");
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error_code, "no_authorization");
    const user = await send(srv, "GET", "/admin/audit", undefined, {
      authorization: `Bearer ${userToken}`,
    });
    assert.equal(user.status, 403);
    assert.equal(user.body.error_code, "not_admin");

    const all = await send(srv, "GET", "/admin/audit", undefined, admin);
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

    const page1 = await send(srv, "GET", "/admin/audit?per_page=2", undefined, admin);
    assert.equal((page1.body as unknown as Entry[]).length, 2);
    const link = page1.headers.get("link") ?? "";
    const last = Math.ceil(total / 2);
    assert.match(link, /<\/admin\/audit\?page=2&per_page=2>; rel="next"/);
    assert.ok(link.includes(`</admin/audit?page=${last}&per_page=2>; rel="last"`), link);
    const page2 = await send(srv, "GET", "/admin/audit?page=2&per_page=2", undefined, admin);
    const ids1 = (page1.body as unknown as Entry[]).map((e) => e.id);
    const ids2 = (page2.body as unknown as Entry[]).map((e) => e.id);
    assert.ok(ids2.length >= 1 && ids2.every((id) => !ids1.includes(id)));

    const filtered = await send(
      srv,
      "GET",
      "/admin/audit?query=action:user_signedup",
      undefined,
      admin,
    );
    assert.equal(Number(filtered.headers.get("x-total-count")), 3);
    assert.ok(
      (filtered.body as unknown as Entry[]).every((e) => e.payload.action === "user_signedup"),
    );

    const badScope = await send(srv, "GET", "/admin/audit?query=color:red", undefined, admin);
    assert.equal(badScope.status, 400);
    assert.match(String(badScope.body.msg), /query scope/);
    const badPage = await send(srv, "GET", "/admin/audit?page=zero", undefined, admin);
    assert.equal(badPage.status, 400);
    assert.match(String(badPage.body.msg), /page/);
  } finally {
    await srv.close();
  }
});

/** The server driven by the client real applications use: @supabase/auth-js. */
import assert from "node:assert/strict";
import { GoTrueAdminApi, GoTrueClient } from "../../helpers/deps.ts";
import { startTestServer } from "../../helpers/server.ts";
import { uniqueEmail } from "../../helpers/http.ts";

Deno.test("auth-js: sign-up, sign-in, refresh, get and update the user, sign-out", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  const client = new GoTrueClient({ url: srv.url, persistSession: false, autoRefreshToken: false });
  try {
    const address = uniqueEmail("js");
    const up = await client.signUp({
      email: address,
      password: "secret-pw-1",
      options: { data: { name: "Jay" } },
    });
    assert.equal(up.error, null);
    assert.ok(up.data.session);
    assert.equal(up.data.user?.email, address);
    assert.equal(up.data.user?.user_metadata.name, "Jay");

    const dup = await client.signUp({ email: address, password: "secret-pw-1" });
    assert.equal(dup.error?.code, "user_already_exists");

    const wrong = await client.signInWithPassword({ email: address, password: "nope-nope" });
    assert.equal(wrong.error?.code, "invalid_credentials");
    assert.equal(wrong.error?.status, 400);

    const signIn = await client.signInWithPassword({ email: address, password: "secret-pw-1" });
    assert.equal(signIn.error, null);
    const first = signIn.data.session!;
    assert.equal(first.token_type, "bearer");
    assert.ok(first.expires_at! > Date.now() / 1000);

    const refreshed = await client.refreshSession();
    assert.equal(refreshed.error, null);
    assert.notEqual(refreshed.data.session?.refresh_token, first.refresh_token);

    const got = await client.getUser();
    assert.equal(got.error, null);
    assert.equal(got.data.user?.id, up.data.user?.id);
    assert.equal(got.data.user?.identities?.[0]?.provider, "email");

    const upd = await client.updateUser({ data: { name: "Jay J." }, password: "secret-pw-2" });
    assert.equal(upd.error, null);
    assert.equal(upd.data.user?.user_metadata.name, "Jay J.");

    const out = await client.signOut();
    assert.equal(out.error, null);
    assert.equal((await client.getSession()).data.session, null);
    const again = await client.signInWithPassword({ email: address, password: "secret-pw-2" });
    assert.equal(again.error, null);
    await client.signOut({ scope: "local" });
  } finally {
    await srv.close();
  }
});

Deno.test("auth-js admin: create, list, get, update and delete users", async () => {
  const srv = await startTestServer({});
  try {
    const admin = new GoTrueAdminApi({
      url: srv.url,
      headers: { Authorization: `Bearer ${await srv.serviceRoleToken()}` },
    });
    const created = [];
    for (let i = 0; i < 3; i++) {
      const r = await admin.createUser({
        email: uniqueEmail(`adm${i}`),
        password: "secret-pw-1",
        email_confirm: true,
        user_metadata: { n: i },
      });
      assert.equal(r.error, null);
      created.push(r.data.user!);
    }
    const list = await admin.listUsers({ page: 1, perPage: 2 });
    assert.equal(list.error, null);
    assert.equal(list.data.users.length, 2);
    const paged = list.data as unknown as {
      total: number;
      nextPage: number | null;
      lastPage: number;
    };
    assert.equal(paged.total, 3);
    assert.equal(paged.nextPage, 2);
    assert.equal(paged.lastPage, 2);

    const id = created[0].id;
    const got = await admin.getUserById(id);
    assert.equal(got.data.user?.email, created[0].email);

    const upd = await admin.updateUserById(id, {
      user_metadata: { n: 10 },
      app_metadata: { plan: "pro" },
      ban_duration: "24h",
    });
    assert.equal(upd.error, null);
    assert.equal(upd.data.user?.user_metadata.n, 10);
    assert.equal(upd.data.user?.app_metadata.plan, "pro");
    assert.ok((upd.data.user as unknown as { banned_until?: string }).banned_until);

    const del = await admin.deleteUser(id);
    assert.equal(del.error, null);
    const gone = await admin.getUserById(id);
    assert.equal(gone.error?.status, 404);
    const soft = await admin.deleteUser(created[1].id, true);
    assert.equal(soft.error, null);
    assert.equal((await admin.listUsers()).data.users.length, 1);
  } finally {
    await srv.close();
  }
});

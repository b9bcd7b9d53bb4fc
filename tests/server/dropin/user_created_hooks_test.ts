/**
 * GoTrue's before_user_created and after_user_created hooks, by HTTP and by
 * PostgreSQL function, through the HTTP API. Payloads follow GoTrue's
 * internal/hooks/v0hooks (BeforeUserCreatedInput / AfterUserCreatedInput:
 * {metadata, user}); where they are asked follows internal/api/hooks.go and
 * its callers (sign-up, anonymous, invite, external; not an admin's user).
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { type HookHandler, type HookServer, startHookServer } from "../../helpers/hook_server.ts";
import { bearer, call, email } from "./_helpers.ts";

function hookEnv(name: string, hook: HookServer): Record<string, string> {
  const X = `AUTHSVC_HOOK_${name.toUpperCase()}`;
  return {
    [`${X}_ENABLED`]: "true",
    [`${X}_URI`]: `${hook.url}/${name}`,
    [`${X}_SECRETS`]: hook.secret,
  };
}

async function withHook(
  name: string,
  handler: (srv: TestServer) => HookHandler,
  fn: (srv: TestServer, hook: HookServer) => Promise<void>,
) {
  const ref: { srv?: TestServer } = {};
  const hook = startHookServer((path, payload) => handler(ref.srv!)(path, payload));
  const srv = ref.srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
    ...hookEnv(name, hook),
  });
  try {
    await fn(srv, hook);
  } finally {
    await srv.close();
    await hook.close();
  }
}

type Obj = Record<string, unknown>;

Deno.test("before_user_created (HTTP): sees the user to be, may refuse with its status", async () => {
  await withHook("before_user_created", () => (_path, payload) => {
    const user = payload.user as Obj;
    return String(user.email).endsWith("@blocked.test")
      ? { error: { http_code: 403, message: "Sign-ups from blocked.test are closed" } }
      : {};
  }, async (srv, hook) => {
    const address = email("before");
    const ok = await call(srv, "POST", "/signup", {
      email: address,
      password: "secret-pw-1",
      data: { plan: "pro" },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(hook.badSignatures, 0);
    assert.equal(hook.calls.length, 1);
    const p = hook.calls[0].payload;
    assert.equal((p.metadata as Obj).name, "before-user-created");
    const u = p.user as Obj;
    assert.equal(u.email, address);
    assert.equal(u.id, (ok.body.user as Obj).id, "the id the user then gets");
    assert.deepEqual(u.user_metadata, { plan: "pro" });
    assert.equal((u.app_metadata as Obj).provider, "email");

    const blocked = `x-${crypto.randomUUID().slice(0, 8)}@blocked.test`;
    const no = await call(srv, "POST", "/signup", { email: blocked, password: "secret-pw-1" });
    assert.equal(no.status, 403, JSON.stringify(no.body));
    assert.equal(no.body.msg, "Sign-ups from blocked.test are closed");
    const refusedId = (hook.calls[1].payload.user as Obj).id as string;
    const service = bearer(await srv.serviceRoleToken());
    const gone = await call(srv, "GET", `/admin/users/${refusedId}`, undefined, service);
    assert.equal(gone.status, 404, "the refused user was not created");

    // anonymous sign-ins are asked too; an admin's user is not (as in GoTrue)
    const anon = await call(srv, "POST", "/signup", {});
    assert.equal(anon.status, 200, JSON.stringify(anon.body));
    assert.equal(hook.calls.length, 3);
    assert.equal((hook.calls[2].payload.user as Obj).is_anonymous, true);
    const admin = await call(srv, "POST", "/admin/users", { email: blocked }, service);
    assert.equal(admin.status, 200, JSON.stringify(admin.body));
    assert.equal(hook.calls.length, 3);
  });
});

Deno.test("before_user_created as a PostgreSQL function refuses a domain", async () => {
  const fn = `buc_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_HOOK_BEFORE_USER_CREATED_ENABLED: "true",
    AUTHSVC_HOOK_BEFORE_USER_CREATED_URI: `pg-functions://postgres/public/${fn}`,
  });
  try {
    await srv.db.query(
      `CREATE FUNCTION public.${fn}(event jsonb) RETURNS jsonb LANGUAGE sql AS $$
         SELECT CASE WHEN event->'user'->>'email' LIKE '%@blocked.test'
           THEN jsonb_build_object('error', jsonb_build_object(
             'http_code', 422, 'message', 'Domain ' || split_part(event->'user'->>'email', '@', 2) || ' is not allowed'))
           ELSE '{}'::jsonb END
       $$`,
    );
    const ok = await call(srv, "POST", "/signup", { email: email(), password: "secret-pw-1" });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const blocked = `y-${crypto.randomUUID().slice(0, 8)}@blocked.test`;
    const no = await call(srv, "POST", "/signup", { email: blocked, password: "secret-pw-1" });
    assert.equal(no.status, 422, JSON.stringify(no.body));
    assert.equal(no.body.msg, "Domain blocked.test is not allowed");
    const [row] = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("users")} WHERE email = $1`,
      [blocked],
    );
    assert.equal(row.n, 0);
  } finally {
    await srv.db.query(`DROP FUNCTION IF EXISTS public.${fn}(jsonb)`).catch(() => {});
    await srv.close();
  }
});

Deno.test("after_user_created (HTTP): called once the user is stored", async () => {
  const storedWhenCalled: boolean[] = [];
  await withHook("after_user_created", (srv) => async (_path, payload) => {
    const id = (payload.user as Obj).id as string;
    storedWhenCalled.push((await srv.services.users.findById(id)) !== null);
    return {};
  }, async (srv, hook) => {
    const address = email("after");
    const r = await call(srv, "POST", "/signup", { email: address, password: "secret-pw-1" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(hook.calls.length, 1);
    const p = hook.calls[0].payload;
    assert.equal((p.metadata as Obj).name, "after-user-created");
    assert.equal((p.user as Obj).id, (r.body.user as Obj).id);
    assert.equal((p.user as Obj).email, address);
    assert.deepEqual(storedWhenCalled, [true], "the user was committed when the hook ran");
    // a sign-in of an existing user creates nobody: no call
    const again = await call(srv, "POST", "/token?grant_type=password", {
      email: address,
      password: "secret-pw-1",
    });
    assert.equal(again.status, 200);
    assert.equal(hook.calls.length, 1);
    // an invitation link an admin generates creates the user: called; an admin's user: not
    const service = bearer(await srv.serviceRoleToken());
    const invited = email("inv");
    const link = await call(srv, "POST", "/admin/generate_link", {
      type: "invite",
      email: invited,
    }, service);
    assert.equal(link.status, 200, JSON.stringify(link.body));
    assert.equal(hook.calls.length, 2);
    assert.equal((hook.calls[1].payload.user as Obj).email, invited);
    const made = await call(srv, "POST", "/admin/users", { email: email("adm") }, service);
    assert.equal(made.status, 200);
    assert.equal(hook.calls.length, 2);
    assert.deepEqual(storedWhenCalled, [true, true]);
  });
});

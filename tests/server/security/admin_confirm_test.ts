/**
 * A GoTrue behaviour found broken (issue 38, item 9b): an app's backend
 * confirms a person right after their sign-up with the admin API
 * (`email_confirm: true`), and the password they chose was dropped, which
 * locked them out. The admin API is the operator vouching for the address:
 * by default the account stays as it was signed up (password, metadata),
 * as in GoTrue. Deployments whose admins confirm addresses nobody proved
 * turn on AUTHSVC_SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN: then only a password
 * sent with the confirmation survives (pre_account_takeover_test.ts).
 */
import assert from "node:assert/strict";
import { call, uniqueEmail } from "../../helpers/http.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";

async function pendingSignUp(srv: TestServer, email: string): Promise<string> {
  const up = await call(srv, "POST", "/signup", {
    body: { email, password: "chosen-password-1", data: { name: "Ada" } },
  });
  assert.equal(up.status, 200, up.text);
  assert.equal(up.body.email_confirmed_at, undefined, "waiting for confirmation");
  return up.body.id as string;
}

async function confirmByBackend(srv: TestServer, id: string) {
  const r = await call(srv, "PUT", `/admin/users/${id}`, {
    body: { email_confirm: true },
    token: await srv.serviceRoleToken(),
  });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.body.email_confirmed_at);
  return r;
}

function signIn(srv: TestServer, email: string) {
  return call(srv, "POST", "/token?grant_type=password", {
    body: { email, password: "chosen-password-1" },
  });
}

Deno.test("backend confirms a pending sign-up with email_confirm: the person keeps the password they chose", async () => {
  // No mail server: the sign-up's confirmation is only logged, the backend confirms instead.
  const srv = await startTestServer({});
  try {
    const email = uniqueEmail("signup");
    const id = await pendingSignUp(srv, email);
    const confirmed = await confirmByBackend(srv, id);
    assert.deepEqual(confirmed.body.user_metadata, { name: "Ada" });
    const r = await signIn(srv, email);
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.close();
  }
});

Deno.test("AUTHSVC_SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN: an admin's confirmation keeps no password nobody proved", async () => {
  const srv = await startTestServer({ AUTHSVC_SECURITY_ADMIN_CONFIRM_RESETS_UNPROVEN: "true" });
  try {
    const email = uniqueEmail("strict");
    const id = await pendingSignUp(srv, email);
    await confirmByBackend(srv, id);
    const r = await signIn(srv, email);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error_code, "invalid_credentials");
  } finally {
    await srv.close();
  }
});

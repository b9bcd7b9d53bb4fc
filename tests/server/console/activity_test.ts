/**
 * What the console counts and shows (issue 46, item 5), over HTTP: a refused
 * non-admin attempt is no sign-in, administrators' actions name them by
 * e-mail, and the inbox's links are whole links.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { DevInbox } from "../../../server/console/inbox.ts";
import { linksIn } from "../../../server/mail/templates.ts";
import { Client, consoleSignIn, createUser, uniqueEmail } from "./_helpers.ts";

const ON = { AUTHSVC_CONSOLE_ENABLED: "true" };

Deno.test("console: a refused non-admin attempt opens no session and is no sign-in", async () => {
  const srv = await startTestServer(ON);
  try {
    const opEmail = uniqueEmail("operator");
    const plainEmail = uniqueEmail("plain");
    await createUser(srv, opEmail, "operator-password-1", "supabase_admin");
    const plain = await createUser(srv, plainEmail, "plain-password-1");

    const refused = await consoleSignIn(new Client(srv), plainEmail, "plain-password-1");
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error_code, "not_admin");

    const op = new Client(srv);
    assert.equal((await consoleSignIn(op, opEmail, "operator-password-1")).status, 200);
    // No session, no sign-in time, no login entry for the refused account.
    const sessions = await op.json(`/console/api/gotrue/admin/users/${plain.id}/sessions`);
    assert.deepEqual(sessions.body.sessions, []);
    const user = await op.json(`/console/api/gotrue/admin/users/${plain.id}`);
    assert.equal(user.body.last_sign_in_at ?? null, null);
    const logins = await op.json("/console/api/gotrue/admin/audit?action=login");
    const actors = logins.body.map((e: { payload: { actor_username: string } }) =>
      e.payload.actor_username
    );
    assert.deepEqual(actors, [opEmail], "the operator's sign-in is the only login");
    // The chart: the operator's sign-in, and the refused attempt as a failed one.
    const { body } = await op.json("/console/api/figures");
    const total = (k: string) =>
      body.minutes.reduce((n: number, m: Record<string, number>) => n + m[k], 0);
    assert.equal(total("signins"), 1);
    assert.equal(total("failures"), 1);
  } finally {
    await srv.close();
  }
});

Deno.test("console: what an administrator does is logged under their e-mail", async () => {
  const srv = await startTestServer(ON);
  try {
    const opEmail = uniqueEmail("operator");
    const op = await createUser(srv, opEmail, "operator-password-1", "supabase_admin");
    const member = await createUser(srv, uniqueEmail("member"), "member-password-1");
    const client = new Client(srv);
    assert.equal((await consoleSignIn(client, opEmail, "operator-password-1")).status, 200);
    const ban = await client.json(`/console/api/gotrue/admin/users/${member.id}`, "PUT", {
      ban_duration: "1h",
    });
    assert.equal(ban.status, 200, JSON.stringify(ban.body));
    const ended = await client.json(
      `/console/api/gotrue/admin/users/${member.id}/sessions`,
      "DELETE",
    );
    assert.equal(ended.status, 200);
    const audit = await client.json(
      `/console/api/gotrue/admin/audit?${new URLSearchParams({ user_id: member.id })}`,
    );
    const byOperator = audit.body.filter((e: { payload: { action: string } }) =>
      ["user_modified", "logout"].includes(e.payload.action)
    );
    assert.equal(byOperator.length, 2, JSON.stringify(audit.body));
    for (const e of byOperator) {
      assert.equal(e.payload.actor_id, op.id);
      assert.equal(e.payload.actor_username, opEmail);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("inbox links end where the link ends, not with the sentence's punctuation", () => {
  assert.deepEqual(
    linksIn(
      "Confirm: https://a.example/verify?token=1&type=signup. Or (https://b.example/x), " +
        'see https://w.example/X_(y); "https://q.example/?a=1"! https://e.example/end...',
    ),
    [
      "https://a.example/verify?token=1&type=signup",
      "https://b.example/x",
      "https://w.example/X_(y)",
      "https://q.example/?a=1",
      "https://e.example/end",
    ],
  );
  const inbox = new DevInbox();
  inbox.add({
    kind: "confirmation",
    to: "a@example.com",
    subject: "Confirm",
    text: "Follow https://auth.example/verify?token=abc.\n",
    code: null,
  }, new Date());
  assert.deepEqual(inbox.list()[0].links, ["https://auth.example/verify?token=abc"]);
});

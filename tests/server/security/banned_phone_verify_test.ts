/**
 * Attack: a banned user's SMS code still does its work (issue 38, item 8).
 * `POST /verify` of type `phone_change` or `sms` used the code up and wrote
 * the new number or the confirmation first, and only the session it then
 * tried to issue was refused: the banned user moved the account to another
 * number. The ban is now checked before the code is used or anything is
 * written (GoTrue's verify.go checks it before the code); once the ban is
 * lifted the same code still works.
 */
import assert from "node:assert/strict";
import { call, type Json, uniqueEmail } from "../../helpers/http.ts";
import type { TestServer } from "../../helpers/server.ts";
import { withPhoneServer } from "../phone/_helpers.ts";

function randomPhone(): string {
  return `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
}

async function admin(srv: TestServer, method: string, path: string, body?: unknown) {
  return await call(srv, method, path, { body, token: await srv.serviceRoleToken() });
}

async function setBan(srv: TestServer, userId: string, duration: string) {
  const r = await admin(srv, "PUT", `/admin/users/${userId}`, { ban_duration: duration });
  assert.equal(r.status, 200, r.text);
}

async function stored(srv: TestServer, userId: string): Promise<Json> {
  return (await admin(srv, "GET", `/admin/users/${userId}`)).body;
}

Deno.test("banned user's phone-change code: refused before it is used, the number stays", async () => {
  await withPhoneServer("twilio", { AUTHSVC_MAILER_AUTOCONFIRM: "true" }, async ({ srv, sms }) => {
    const email = uniqueEmail("banned");
    const up = await call(srv, "POST", "/signup", { body: { email, password: "banned-pw-1" } });
    assert.equal(up.status, 200, up.text);
    const userId = (up.body.user as { id: string }).id;
    const phone = randomPhone();
    const change = await call(srv, "PUT", "/user", {
      body: { phone },
      token: up.body.access_token as string,
    });
    assert.equal(change.status, 200, change.text);
    const code = sms.lastCode(phone)!;
    assert.ok(code, "the code went to the new number");

    await setBan(srv, userId, "24h");
    const v = await call(srv, "POST", "/verify", {
      body: { type: "phone_change", phone, token: code },
    });
    assert.equal(v.status, 403, v.text);
    assert.equal(v.body.error_code, "user_banned");
    const after = await stored(srv, userId);
    assert.equal(after.phone, "", "the banned user's number did not change");
    assert.equal(after.new_phone, phone.slice(1), "the change is still pending");

    // The code was not used up: once the ban is lifted it completes the change.
    await setBan(srv, userId, "none");
    const again = await call(srv, "POST", "/verify", {
      body: { type: "phone_change", phone, token: code },
    });
    assert.equal(again.status, 200, again.text);
    assert.equal((await stored(srv, userId)).phone, phone.slice(1));
  });
});

Deno.test("banned user's SMS sign-up code: refused before it is used, nothing confirmed", async () => {
  await withPhoneServer("twilio", {}, async ({ srv, sms }) => {
    const phone = randomPhone();
    const up = await call(srv, "POST", "/signup", { body: { phone, password: "banned-pw-1" } });
    assert.equal(up.status, 200, up.text);
    const userId = (up.body.id ?? (up.body.user as { id: string }).id) as string;
    const code = sms.lastCode(phone)!;
    assert.ok(code);

    await setBan(srv, userId, "24h");
    const v = await call(srv, "POST", "/verify", { body: { type: "sms", phone, token: code } });
    assert.equal(v.status, 403, v.text);
    assert.equal(v.body.error_code, "user_banned");
    assert.equal((await stored(srv, userId)).phone_confirmed_at, undefined, "not confirmed");

    await setBan(srv, userId, "none");
    const again = await call(srv, "POST", "/verify", { body: { type: "sms", phone, token: code } });
    assert.equal(again.status, 200, again.text);
    assert.ok((await stored(srv, userId)).phone_confirmed_at);
  });
});

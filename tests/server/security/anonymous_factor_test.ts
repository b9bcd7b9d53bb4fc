/**
 * Attack: an anonymous session enrolls MFA factors (issue 38, item 8).
 * Anyone can mint anonymous accounts at will; each could hold factors (rows,
 * challenges, SMS codes sent to any number for a phone factor) though the
 * account has nothing a second factor protects. GoTrue's requireNotAnonymous
 * refuses every /factors route: 403 no_authorization. Once the user adds an
 * address and stops being anonymous, factors work.
 */
import assert from "node:assert/strict";
import { call, uniqueEmail } from "../../helpers/http.ts";
import { startTestServer } from "../../helpers/server.ts";

const MESSAGE = "Anonymous user not allowed to perform these actions";

Deno.test("anonymous session enrolls an MFA factor: refused on every /factors route, as GoTrue does", async () => {
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
  });
  try {
    const anon = await call(srv, "POST", "/signup", { body: {} });
    assert.equal(anon.status, 200, anon.text);
    const token = anon.body.access_token as string;
    const userId = (anon.body.user as { id: string; is_anonymous: boolean }).id;
    assert.equal((anon.body.user as { is_anonymous: boolean }).is_anonymous, true);

    const someFactor = crypto.randomUUID();
    for (
      const [method, path, body] of [
        ["POST", "/factors", { factor_type: "totp" }],
        ["POST", "/factors", { factor_type: "phone", phone: "+15551234567" }],
        ["POST", `/factors/${someFactor}/challenge`, {}],
        ["POST", `/factors/${someFactor}/verify`, { challenge_id: someFactor, code: "123456" }],
        ["DELETE", `/factors/${someFactor}`, undefined],
      ] as const
    ) {
      const r = await call(srv, method, path, { body, token });
      assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
      assert.equal(r.body.error_code, "no_authorization", `${method} ${path}`);
      assert.equal(r.body.msg, MESSAGE, `${method} ${path}`);
    }
    const admin = await srv.serviceRoleToken();
    const stored = await call(srv, "GET", `/admin/users/${userId}/factors`, { token: admin });
    assert.equal(stored.status, 200, stored.text);
    assert.deepEqual(stored.body, [], "no factor was stored");

    // The same account, made permanent with an address, may enroll.
    const upgraded = await call(srv, "PUT", "/user", {
      body: { email: uniqueEmail("kept"), password: "kept-password-1" },
      token,
    });
    assert.equal(upgraded.status, 200, upgraded.text);
    assert.equal(upgraded.body.is_anonymous, false);
    const enrolled = await call(srv, "POST", "/factors", { body: { factor_type: "totp" }, token });
    assert.equal(enrolled.status, 200, enrolled.text);
  } finally {
    await srv.close();
  }
});

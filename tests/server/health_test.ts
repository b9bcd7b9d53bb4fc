import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

Deno.test("health answers once migrations are applied; settings list every provider", async () => {
  const srv = await startTestServer({ AUTHSVC_EXTERNAL_GITHUB_ENABLED: "false" });
  try {
    const h = await srv.fetch("/health");
    assert.equal(h.status, 200);
    assert.deepEqual(Object.keys(await h.json()).sort(), ["description", "name", "version"]);
    const s = await (await srv.fetch("/settings")).json();
    assert.equal(s.external.github, false);
    assert.equal(
      Object.keys(s.external).filter((k) => !["email", "phone", "anonymous_users"].includes(k))
        .length,
      18,
    );
    assert.equal(s.disable_signup, false);
    assert.equal(typeof s.mailer_autoconfirm, "boolean");
    const nf = await srv.fetch("/nope");
    assert.equal(nf.status, 404);
    const body = await nf.json();
    assert.equal(body.code, 404);
    assert.ok(nf.headers.get("x-request-id"));
  } finally {
    await srv.close();
  }
});

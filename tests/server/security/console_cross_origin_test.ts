/**
 * Attack on the operators' console (issue 38, item 5): a script on a sibling
 * subdomain of the console's host is on the same site, so the browser sends
 * it the operator's SameSite=Strict cookies; before, the console's API
 * answered its reads with `Access-Control-Allow-Origin: <origin>` and
 * credentials and checked neither Origin nor the CSRF header on GET.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { ConsoleBrowser, createOperator } from "./_console.ts";

const READS = [
  "/console/api/gotrue/admin/users",
  "/console/api/gotrue/admin/audit",
  "/console/api/inbox",
];

Deno.test("a script on a sibling subdomain reads the user list, the audit log and the dev inbox with an operator's cookies", async () => {
  const srv = await startTestServer({ AUTHSVC_CONSOLE_ENABLED: "true" });
  try {
    const email = `op-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await createOperator(srv, email, "operator-password-1");
    const op = new ConsoleBrowser(srv);
    await op.signIn(email, "operator-password-1");
    // Something in each list: a recovery mail lands in the development inbox (no SMTP_HOST).
    const rec = await op.fetch("/console/api/gotrue/recover", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email }),
    });
    assert.equal(rec.status, 200, await rec.text());

    const own = new URL(srv.url).origin;
    const sibling = `http://evil.${new URL(srv.url).hostname}.nip.io:${new URL(srv.url).port}`;
    for (const path of READS) {
      // The console's own page reads it.
      const ok = await op.fetch(path, {
        headers: { origin: own, "sec-fetch-site": "same-origin" },
      });
      const text = await ok.text();
      assert.equal(ok.status, 200, `${path}: ${text}`);
      assert.ok(text.includes(email), `${path} holds the operator's address`);

      // The sibling's script: the browser sends the cookies (same site), but the script cannot
      // read the host-only CSRF cookie.
      const preflight = await srv.fetch(path, {
        method: "OPTIONS",
        headers: {
          origin: sibling,
          "access-control-request-method": "GET",
          "access-control-request-headers": "x-csrf-token",
        },
      });
      await preflight.body?.cancel();
      assert.equal(preflight.headers.get("access-control-allow-origin"), null, `${path} preflight`);
      assert.equal(preflight.headers.get("access-control-allow-credentials"), null);
      for (
        const headers of <Record<string, string>[]> [
          { origin: sibling, "sec-fetch-site": "same-site" },
          { origin: sibling },
          {},
        ]
      ) {
        const res = await op.fetch(path, { csrf: false, headers });
        const body = await res.text();
        assert.equal(res.status, 403, `${path} ${JSON.stringify(headers)}: ${body}`);
        assert.equal(JSON.parse(body).error_code, "csrf_failed");
        assert.ok(!body.includes(email));
        assert.equal(res.headers.get("access-control-allow-origin"), null, path);
        assert.equal(res.headers.get("access-control-allow-credentials"), null, path);
      }
      // Even with the CSRF token (had it leaked), another origin is refused.
      const leaked = await op.fetch(path, { headers: { origin: sibling } });
      const body = await leaked.text();
      assert.equal(leaked.status, 403, `${path}: ${body}`);
      assert.equal(leaked.headers.get("access-control-allow-origin"), null);
    }
    // The API itself keeps its CORS answers for apps on any origin.
    const settings = await srv.fetch("/settings", { headers: { origin: sibling } });
    await settings.body?.cancel();
    assert.equal(settings.headers.get("access-control-allow-origin"), sibling);
  } finally {
    await srv.close();
  }
});

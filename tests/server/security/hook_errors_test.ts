/**
 * Attack: a failing auth hook tells the client about the operator's
 * internals (issue 38, item 8). The answer to a PostgreSQL hook that raised
 * carried PostgreSQL's text (table names, hosts), and an HTTP hook that could
 * not be reached named its address. GoTrue answers "Error running hook URI:
 * <uri>" and "Failed to reach hook after maximum retries"; the cause belongs
 * in the server's log, where the operator finds it.
 */
import assert from "node:assert/strict";
import { call, uniqueEmail } from "../../helpers/http.ts";
import { startTestServer } from "../../helpers/server.ts";

const SECRET_DETAIL = "tenant-db.internal 10.11.12.13:6432 relation secret_tenants";

Deno.test("a failing PostgreSQL hook: GoTrue's message to the client, PostgreSQL's text only in the log", async () => {
  const fn = `leaky_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const uri = `pg-functions://postgres/public/${fn}`;
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_ENABLED: "true",
    AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_URI: uri,
    LOG_LEVEL: "warn",
  });
  try {
    await srv.db.query(
      `CREATE FUNCTION public.${fn}(event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION '${SECRET_DETAIL}'; END $$`,
    );
    const r = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("hook"), password: "hook-password-1" },
    });
    assert.equal(r.status, 500, r.text);
    assert.equal(r.body.error_code, "unexpected_failure");
    assert.equal(r.body.msg, `Error running hook URI: ${uri}`);
    assert.ok(!r.text.includes("10.11.12.13") && !r.text.includes("secret_tenants"), r.text);
    assert.ok(
      srv.logs.some((l) => l.includes("secret_tenants")),
      "the operator finds PostgreSQL's text in the log",
    );
  } finally {
    await srv.db.query(`DROP FUNCTION IF EXISTS public.${fn}(jsonb)`).catch(() => {});
    await srv.close();
  }
});

Deno.test("an unreachable HTTP hook: GoTrue's message to the client, the address only in the log", async () => {
  // A port nothing listens on.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_ENABLED: "true",
    AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_URI: `http://127.0.0.1:${port}/hook`,
    AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_SECRETS: "v1,whsec_" +
      btoa("0123456789abcdef0123456789abcdef"),
    LOG_LEVEL: "warn",
  });
  try {
    const r = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("hook"), password: "hook-password-1" },
    });
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.error_code, "hook_timeout_after_retry");
    assert.equal(r.body.msg, "Failed to reach hook after maximum retries");
    assert.ok(!r.text.includes(String(port)), r.text);
    assert.ok(
      srv.logs.some((l) => l.includes("auth hook failed") && l.includes(String(port))),
      "the operator finds the address in the log",
    );
  } finally {
    await srv.close();
  }
});

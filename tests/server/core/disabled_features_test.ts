/**
 * GoTrue features this server does not have answer as GoTrue does with them off (its defaults),
 * so clients such as auth-js report the same errors: SAML SSO (middleware.go requireSAMLEnabled)
 * and Web3 sign-in (web3.go).
 */
import assert from "node:assert/strict";
import { postJson, startTestServer } from "../../helpers/server.ts";

Deno.test("SAML routes answer 404 saml_provider_disabled, as GoTrue with SAML off", async () => {
  const srv = await startTestServer();
  try {
    for (
      const [method, path] of [
        ["POST", "/sso"],
        ["GET", "/sso/saml/metadata"],
        ["POST", "/sso/saml/acs"],
      ]
    ) {
      const res = await srv.fetch(path, {
        method,
        headers: method === "POST" ? { "content-type": "application/json" } : {},
        body: method === "POST" ? JSON.stringify({ domain: "example.com" }) : undefined,
      });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.deepEqual(await res.json(), {
        code: 404,
        error_code: "saml_provider_disabled",
        msg: "SAML 2.0 is disabled",
      });
    }
  } finally {
    await srv.close();
  }
});

Deno.test("grant_type=web3 answers 422 web3_provider_disabled, as GoTrue with Web3 off", async () => {
  const srv = await startTestServer();
  try {
    for (const body of [{ chain: "solana", message: "m", signature: "s" }, {}]) {
      const r = await postJson(srv, "/token?grant_type=web3", body);
      assert.equal(r.status, 422);
      assert.equal(r.body.error_code, "web3_provider_disabled");
      assert.equal(r.body.msg, "Web3 provider is disabled");
    }
    const other = await postJson(srv, "/token?grant_type=saml2_bearer", {});
    assert.equal(other.status, 400);
    assert.equal(other.body.error_code, "unsupported_grant_type");
  } finally {
    await srv.close();
  }
});

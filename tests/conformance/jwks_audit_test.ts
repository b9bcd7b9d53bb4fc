/** Cases ported from supabase/auth internal/api/jwks_test.go and audit_test.go. */
import { jose } from "../../deps.ts";
import { assert, conformance, type Env, ported } from "./_helpers.ts";

const { privateKey } = await jose.generateKeyPair("RS256", { extractable: true });
const RSA = {
  ...(await jose.exportJWK(privateKey)),
  kid: "conformance-rsa",
  alg: "RS256",
  key_ops: ["sign", "verify"],
};

conformance("jwks_test.go", {}, [
  ported("TestJwks/hmac key should not be returned", async (e) => {
    const r = await e.call("GET", "/.well-known/jwks.json");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.keys.length, 0);
  }),
]);

conformance("jwks_test.go", { AUTHSVC_JWT_KEYS: JSON.stringify([RSA]) }, [
  ported("TestJwks/rsa public key returned", async (e) => {
    const r = await e.call("GET", "/.well-known/jwks.json");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.keys.length, 1);
    assert.equal(r.body.keys[0].kid, "conformance-rsa");
    assert.equal(r.body.keys[0].d, undefined, "no private part");
  }),
]);

/** The admin deletes a user: the one audit entry of a fresh server. */
async function deleteEvent(e: Env) {
  const email = e.email("test-delete");
  const u = await e.admin("POST", "/admin/users", { email, phone: e.phone() });
  assert.equal(u.status, 200, u.text);
  // only the deletion should be in the log: clear what the creation wrote
  await e.srv.db.query(`DELETE FROM ${e.srv.db.t("audit_log_entries")}`);
  const d = await e.admin("DELETE", `/admin/users/${u.body.id}`);
  assert.equal(d.status, 200, d.text);
  return email;
}

function checkEntry(
  logs: { payload: { actor_username?: string; traits?: Record<string, unknown> } }[],
  email: string,
) {
  assert.equal(logs.length, 1, JSON.stringify(logs));
  assert.ok("actor_username" in logs[0].payload);
  assert.equal(logs[0].payload.traits?.user_email, email);
}

conformance("audit_test.go", {}, [
  ported("TestAuditGet", async (e) => {
    const email = await deleteEvent(e);
    const r = await e.admin("GET", "/admin/audit");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("link"), '</admin/audit?page=1>; rel="last"');
    assert.equal(r.headers.get("x-total-count"), "1");
    checkEntry(r.body, email);
  }),
], { sms: true });

for (const q of ["action:user_deleted", "type:team"]) {
  conformance("audit_test.go", {}, [
    ported(`TestAuditFilters (${q})`, async (e) => {
      const email = await deleteEvent(e);
      const r = await e.admin("GET", `/admin/audit?query=${q}`);
      assert.equal(r.status, 200, r.text);
      checkEntry(r.body, email);
    }),
  ], { sms: true });
}

/**
 * PUT /admin/users/<id>/factors/<factor_id> (GoTrue's adminUserUpdateFactor):
 * the refusals around the two updates the conformance suite ports.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { accessToken, api, MFA_ENV, signedUp } from "./_helpers.ts";

Deno.test("admin factor update: names, numbers, and what is refused", async () => {
  const srv = await startTestServer({ ...MFA_ENV, AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true" });
  try {
    const { client, userId } = await signedUp(srv);
    const token = await accessToken(client);
    const totp = await api(srv, "POST", "/factors", token, {
      factor_type: "totp",
      friendly_name: "laptop",
    });
    assert.equal(totp.status, 200, JSON.stringify(totp.body));
    const phone = await api(srv, "POST", "/factors", token, {
      factor_type: "phone",
      phone: "+15550107788",
      friendly_name: "phone",
    });
    assert.equal(phone.status, 200, JSON.stringify(phone.body));
    const admin = await srv.serviceRoleToken();
    const put = (factorId: string, body: unknown, as = admin, user = userId) =>
      api(srv, "PUT", `/admin/users/${user}/factors/${factorId}`, as, body);

    // another factor's name: 422 mfa_factor_name_conflict; its own name is fine
    const clash = await put(String(totp.body.id), { friendly_name: "phone" });
    assert.equal(clash.status, 422, JSON.stringify(clash.body));
    assert.equal(clash.body.error_code, "mfa_factor_name_conflict");
    const same = await put(String(totp.body.id), { friendly_name: "laptop" });
    assert.equal(same.status, 200, JSON.stringify(same.body));

    // a number that is not E.164, for a phone factor: 400 naming the field; nothing changes
    const bad = await put(String(phone.body.id), {
      phone: "not-a-number",
      friendly_name: "renamed",
    });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(bad.body.error_code, "validation_failed");
    assert.match(String(bad.body.msg), /E\.164.*phone/);
    // phone is ignored for a TOTP factor, as GoTrue; empty fields keep their values
    const ignored = await put(String(totp.body.id), { phone: "+15550100000", friendly_name: "" });
    assert.equal(ignored.status, 200, JSON.stringify(ignored.body));
    assert.equal(ignored.body.friendly_name, "laptop");
    assert.equal(ignored.body.phone, undefined);
    const list = await api(srv, "GET", `/admin/users/${userId}/factors`, admin);
    assert.deepEqual(
      (list.body as unknown as { friendly_name: string; phone?: string }[]).map((
        f,
      ) => [f.friendly_name, f.phone ?? null]),
      [["laptop", null], ["phone", "15550107788"]],
    );

    // unknown factor, another user's factor, an unknown user, a non-admin caller
    const missing = await put(crypto.randomUUID(), { friendly_name: "x" });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error_code, "mfa_factor_not_found");
    const other = await signedUp(srv);
    const foreign = await put(String(totp.body.id), { friendly_name: "x" }, admin, other.userId);
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error_code, "mfa_factor_not_found");
    const noUser = await put(
      String(totp.body.id),
      { friendly_name: "x" },
      admin,
      crypto.randomUUID(),
    );
    assert.equal(noUser.status, 404);
    assert.equal(noUser.body.error_code, "user_not_found");
    const notAdmin = await put(String(totp.body.id), { friendly_name: "x" }, token);
    assert.equal(notAdmin.status, 403);
    assert.equal(notAdmin.body.error_code, "not_admin");
    const types = await put(String(totp.body.id), { friendly_name: 7 });
    assert.equal(types.status, 400, JSON.stringify(types.body));

    // the change is in the audit log
    const audit = await api(srv, "GET", "/admin/audit", admin);
    const entries = audit.body as unknown as { payload: { action: string } }[];
    assert.ok(entries.some((e) => e.payload.action === "factor_updated"), JSON.stringify(entries));
  } finally {
    await srv.close();
  }
});

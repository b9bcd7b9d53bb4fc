/**
 * Attack: a stolen password (an aal1 session) used to take over an account
 * protected by a second factor (issue 17, item 2). Once a user has a verified
 * factor, an aal1 session cannot change the password, the e-mail or the
 * phone (GoTrue's 401 insufficient_aal), link or unlink identities (stricter
 * than GoTrue), enroll another factor or remove one; an aal2 session can.
 * Each attack goes through @supabase/auth-js.
 */
import assert from "node:assert/strict";
import type { GoTrueClient } from "../../helpers/deps.ts";
import { authJsClient } from "../../helpers/auth_js.ts";
import type { TestServer } from "../../helpers/server.ts";
import { defaultUser, followLink, land, serverWithFakes } from "../providers/_helpers.ts";
import { totpAt } from "../mfa/_helpers.ts";

const UPDATE_MESSAGE = "AAL2 session is required to update email or password when MFA is enabled.";
const PASSWORD = "owner-password-1";

interface Victim {
  email: string;
  userId: string;
  /** The owner's client, raised to aal2 with their TOTP factor. */
  owner: GoTrueClient;
  /** The attacker's client: signed in with the stolen password only (aal1). */
  thief: GoTrueClient;
  factorId: string;
}

/** A user with a verified TOTP factor, an aal2 owner and an aal1 thief. */
async function victim(srv: TestServer): Promise<Victim> {
  const email = `victim-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const owner = authJsClient(srv.url);
  const up = await owner.signUp({ email, password: PASSWORD });
  assert.equal(up.error, null);
  const enrolled = await owner.mfa.enroll({ factorType: "totp", friendlyName: "app" });
  assert.equal(enrolled.error, null);
  const f = enrolled.data!;
  const verified = await owner.mfa.challengeAndVerify({
    factorId: f.id,
    code: totpAt(f.totp.secret, Date.now()),
  });
  assert.equal(verified.error, null);
  const aal = await owner.mfa.getAuthenticatorAssuranceLevel();
  assert.equal(aal.data?.currentLevel, "aal2");

  const thief = authJsClient(srv.url);
  const signIn = await thief.signInWithPassword({ email, password: PASSWORD });
  assert.equal(signIn.error, null);
  const thiefAal = await thief.mfa.getAuthenticatorAssuranceLevel();
  assert.equal(thiefAal.data?.currentLevel, "aal1");
  assert.equal(thiefAal.data?.nextLevel, "aal2");
  return { email, userId: up.data.user!.id, owner, thief, factorId: f.id };
}

function assertInsufficientAal(
  r: { error: { status?: number; code?: string; message: string } | null },
  message = UPDATE_MESSAGE,
) {
  assert.ok(r.error, "refused");
  assert.equal(r.error.status, 401);
  assert.equal(r.error.code, "insufficient_aal");
  assert.equal(r.error.message, message);
}

async function withServer(fn: (srv: TestServer) => Promise<void>) {
  const env = await serverWithFakes(["github"], {
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
  });
  try {
    await fn(env.srv);
  } finally {
    await env.close();
  }
}

/** The user as the admin API sees it. */
async function stored(srv: TestServer, id: string): Promise<Record<string, unknown>> {
  const res = await srv.fetch(`/admin/users/${id}`, {
    headers: { authorization: `Bearer ${await srv.serviceRoleToken()}` },
  });
  return await res.json();
}

Deno.test("a stolen password (aal1 session) cannot change the password of an MFA user", async () => {
  await withServer(async (srv) => {
    const v = await victim(srv);
    assertInsufficientAal(await v.thief.updateUser({ password: "thief-password-1" }));
    // The owner's password still works, the thief's does not.
    const thiefLogin = await authJsClient(srv.url).signInWithPassword({
      email: v.email,
      password: "thief-password-1",
    });
    assert.equal(thiefLogin.error?.code, "invalid_credentials");
    // The aal2 session may.
    const ok = await v.owner.updateUser({ password: "owner-password-2" });
    assert.equal(ok.error, null);
    const again = await authJsClient(srv.url).signInWithPassword({
      email: v.email,
      password: "owner-password-2",
    });
    assert.equal(again.error, null);
  });
});

Deno.test("a stolen password (aal1 session) cannot change the e-mail address of an MFA user", async () => {
  await withServer(async (srv) => {
    const v = await victim(srv);
    assertInsufficientAal(await v.thief.updateUser({ email: "thief@example.net" }));
    // The address it already has is no change, so no refusal (as GoTrue compares).
    const same = await v.thief.updateUser({ email: v.email, data: { nickname: "x" } });
    assert.equal(same.error, null);
    const u = await stored(srv, v.userId);
    assert.equal(u.email, v.email);
    assert.ok(!u.new_email, "no change pending");
    const ok = await v.owner.updateUser({ email: "owner-new@example.net" });
    assert.equal(ok.error, null);
  });
});

Deno.test("a stolen password (aal1 session) cannot change the phone of an MFA user", async () => {
  await withServer(async (srv) => {
    const v = await victim(srv);
    assertInsufficientAal(await v.thief.updateUser({ phone: "+15550101001" }));
    assert.ok(!(await stored(srv, v.userId)).phone, "phone unchanged");
    const ok = await v.owner.updateUser({ phone: "+15550101002" });
    assert.equal(ok.error, null);
    assert.equal((await stored(srv, v.userId)).phone, "15550101002");
  });
});

Deno.test("a stolen password (aal1 session) cannot link the thief's provider account", async () => {
  await withServer(async (srv) => {
    const v = await victim(srv);
    const IDENTITY_MESSAGE =
      "AAL2 session is required to link or unlink identities when MFA is enabled.";
    const refused = await v.thief.linkIdentity({
      provider: "github",
      options: { skipBrowserRedirect: true },
    });
    assertInsufficientAal(refused, IDENTITY_MESSAGE);
    const ok = await v.owner.linkIdentity({
      provider: "github",
      options: { skipBrowserRedirect: true },
    });
    assert.equal(ok.error, null);
    assert.ok(ok.data.url);
  });
});

Deno.test("a stolen password (aal1 session) cannot unlink the owner's identities", async () => {
  const env = await serverWithFakes(["github"], { AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const srv = env.srv;
    const v = await victim(srv);
    env.fakes.github.user = defaultUser();
    const link = await v.owner.linkIdentity({
      provider: "github",
      options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/linked" },
    });
    assert.equal(link.error, null);
    const landed = await land(
      srv,
      await env.fakes.github.approve(await followLink(srv, link.data.url!)),
    );
    assert.equal(landed.hash.get("error"), null, landed.hash.get("error_description") ?? "");
    const ids = (await v.thief.getUserIdentities()).data!.identities;
    assert.equal(ids.length, 2);
    const github = ids.find((i) => i.provider === "github")!;
    assertInsufficientAal(
      await v.thief.unlinkIdentity(github),
      "AAL2 session is required to link or unlink identities when MFA is enabled.",
    );
    assert.equal((await v.owner.getUserIdentities()).data!.identities.length, 2);
    assert.equal((await v.owner.unlinkIdentity(github)).error, null);
    assert.equal((await v.owner.getUserIdentities()).data!.identities.length, 1);
  } finally {
    await env.close();
  }
});

Deno.test("a stolen password (aal1 session) cannot enroll its own factor or remove the owner's", async () => {
  await withServer(async (srv) => {
    const v = await victim(srv);
    const enroll = await v.thief.mfa.enroll({ factorType: "totp", friendlyName: "thief" });
    assert.equal(enroll.error?.code, "insufficient_aal");
    const unenroll = await v.thief.mfa.unenroll({ factorId: v.factorId });
    assert.equal(unenroll.error?.code, "insufficient_aal");
    const factors = (await stored(srv, v.userId)).factors as { id: string }[];
    assert.deepEqual(factors.map((f) => f.id), [v.factorId]);
    // The aal2 session may add a second factor.
    const second = await v.owner.mfa.enroll({ factorType: "totp", friendlyName: "backup" });
    assert.equal(second.error, null);
  });
});

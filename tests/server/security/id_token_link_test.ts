/**
 * Attack: a stolen password (an aal1 session) of a user with MFA links the
 * thief's provider account through `POST /token?grant_type=id_token` with
 * `link_identity` (issue 38, item 3), the road around the gates of
 * `GET /user/identities/authorize`; the linked provider account then signs
 * in without the second factor. The grant obeys the same two gates, checked
 * before any provider work (the issuer's keys are not even fetched):
 * SECURITY_MANUAL_LINKING_ENABLED (404 manual_linking_disabled) and an aal2
 * session once the user has a verified factor (401 insufficient_aal).
 */
import assert from "node:assert/strict";
import { call } from "../../helpers/http.ts";
import { type LocalIssuer, startLocalIssuer } from "../../helpers/id_token_issuer.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { idTokenProviderEnv } from "../dropin/_helpers.ts";
import { TestClock } from "../mfa/_helpers.ts";
import { account, passwordSignIn, totpStep } from "./_helpers.ts";

const AAL2_MESSAGE = "AAL2 session is required to link or unlink identities when MFA is enabled.";

async function withIssuer(
  env: Record<string, string>,
  fn: (srv: TestServer, iss: LocalIssuer, clock: TestClock) => Promise<void>,
) {
  const iss = await startLocalIssuer();
  const clock = new TestClock();
  const srv = await startTestServer({
    ...idTokenProviderEnv("google", iss.url),
    ...env,
  }, { clock });
  try {
    await fn(srv, iss, clock);
  } finally {
    await srv.close();
    await iss.close();
  }
}

/** The thief's own Google account, as an ID token the thief's phone holds. */
function thiefsIdToken(iss: LocalIssuer): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return iss.sign({
    iss: iss.url,
    sub: `thief-${crypto.randomUUID()}`,
    aud: "ios-client",
    iat: now,
    exp: now + 600,
    email: `thief-${crypto.randomUUID().slice(0, 8)}@example.com`,
    email_verified: true,
  });
}

async function providersOf(srv: TestServer, userId: string): Promise<string[]> {
  const r = await call(srv, "GET", `/admin/users/${userId}`, {
    token: await srv.serviceRoleToken(),
  });
  return (r.body.identities as { provider: string }[]).map((i) => i.provider).sort();
}

Deno.test("id_token link_identity with manual linking off: 404 manual_linking_disabled before any provider work", async () => {
  await withIssuer({}, async (srv, iss) => {
    const victim = await account(srv);
    const token = await passwordSignIn(srv, victim.email);
    const r = await call(srv, "POST", "/token?grant_type=id_token", {
      body: { provider: "google", id_token: await thiefsIdToken(iss), link_identity: true },
      token,
    });
    assert.equal(r.status, 404, r.text);
    assert.equal(r.body.error_code, "manual_linking_disabled");
    assert.equal(iss.jwksFetches, 0, "the provider's keys were not fetched");
    assert.deepEqual(await providersOf(srv, victim.userId), ["email"]);
    // The same answer as the redirect road's.
    const authorize = await call(srv, "GET", "/user/identities/authorize?provider=google", {
      token,
    });
    assert.equal(authorize.status, 404);
    assert.equal(authorize.body.error_code, "manual_linking_disabled");
  });
});

Deno.test("stolen password of an MFA user: id_token link_identity from the aal1 session is refused", async () => {
  await withIssuer({ AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: "true" }, async (srv, iss, clock) => {
    const now = () => clock.ms;
    const victim = await account(srv, { totp: true, now });
    const thief = await passwordSignIn(srv, victim.email);
    const r = await call(srv, "POST", "/token?grant_type=id_token", {
      body: { provider: "google", id_token: await thiefsIdToken(iss), link_identity: true },
      token: thief,
    });
    assert.equal(r.status, 401, r.text);
    assert.equal(r.body.error_code, "insufficient_aal");
    assert.equal(r.body.msg, AAL2_MESSAGE);
    assert.equal(r.body.access_token, undefined);
    assert.equal(iss.jwksFetches, 0, "the provider's keys were not fetched");
    assert.deepEqual(await providersOf(srv, victim.userId), ["email"]);

    // The owner, after the TOTP step, links their own Google account.
    const own = await passwordSignIn(srv, victim.email);
    clock.advance(30);
    const aal2 = await totpStep(srv, own, victim, now);
    const linked = await call(srv, "POST", "/token?grant_type=id_token", {
      body: { provider: "google", id_token: await thiefsIdToken(iss), link_identity: true },
      token: aal2,
    });
    assert.equal(linked.status, 200, linked.text);
    assert.deepEqual(await providersOf(srv, victim.userId), ["email", "google"]);
  });
});

/**
 * The device authorization grant (RFC 8628): against oidc-provider (start,
 * poll while pending, the user approves on the verification page, token),
 * and against a stub token endpoint for what oidc-provider does not answer
 * on demand (slow_down, access_denied). Waiting is injected: no test sleeps.
 */
import assert from "node:assert/strict";
import { Client, OAuthError } from "../../mod.ts";
import {
  DEVICE_CODE_GRANT,
  type DeviceAuthorization,
  pollDeviceToken,
  startDeviceAuthorization,
} from "../../oidc.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";
import { json, startStub } from "./_stub.ts";

Deno.test("device grant against oidc-provider: start, pending polls at the interval, approval, token", async () => {
  await using op = await startOidcProvider({
    clients: [{
      client_id: "tv",
      client_secret: "tv-secret-123456",
      grant_types: [DEVICE_CODE_GRANT, "refresh_token"],
      response_types: [],
      redirect_uris: [],
    }],
    configuration: {
      features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true } },
    },
  });
  const client = await Client.discover(op.issuer, "tv", "tv-secret-123456");
  assert.equal(client.options.deviceAuthorizationUrl, `${op.issuer}/device/auth`);
  const auth = await startDeviceAuthorization(client, { scope: "openid offline_access" });
  assert.match(auth.user_code, /^[A-Z]{4}-[A-Z]{4}$/);
  assert.equal(auth.verification_uri, `${op.issuer}/device`);
  assert.ok(auth.verification_uri_complete?.includes(auth.user_code));
  const waits: number[] = [];
  let approved = false;
  const token = await pollDeviceToken(client, auth, {
    wait: async (ms) => {
      waits.push(ms);
      if (waits.length === 3) {
        // the user opens the verification page, confirms the code, logs in and consents;
        // the provider ends on its success page (no redirect to follow)
        await assert.rejects(
          op.login(auth.verification_uri_complete!, { login: "tv-user", redirectUri: "http://x/" }),
          /Sign-in Success/,
        );
        approved = true;
      }
    },
  });
  assert.ok(approved);
  assert.deepEqual(waits, [5000, 5000, 5000], "two pending polls, then the token");
  assert.ok(token.token.length > 20);
  assert.ok(token.refreshToken);
  const me = await token.get(op.endpoints.userinfo);
  assert.equal((me.parsed as { sub: string }).sub, "tv-user");
});

Deno.test("device grant: slow_down adds 5 s, access_denied ends, expiry ends without polling", async () => {
  const answers = [
    json({ error: "authorization_pending" }, 400),
    json({ error: "slow_down" }, 400),
    json({ error: "authorization_pending" }, 400),
    json({ error: "access_denied", error_description: "the user said no" }, 400),
  ];
  await using stub = startStub((req) => {
    if (req.url.pathname === "/device") {
      return json({
        device_code: "dev-code-secret-1",
        user_code: "ABCD-EFGH",
        verification_uri: "https://example.test/device",
        expires_in: 600,
        interval: 2,
      });
    }
    return answers.shift()!;
  });
  const client = new Client("tv", "s3cret", { site: stub.url, deviceAuthorizationUrl: "/device" });
  const auth = await startDeviceAuthorization(client, { scope: "read" });
  assert.equal(stub.last().form.get("client_id"), "tv");
  const waits: number[] = [];
  await assert.rejects(
    pollDeviceToken(client, auth, { wait: (ms) => Promise.resolve(void waits.push(ms)) }),
    (e: unknown) => {
      assert.ok(e instanceof OAuthError);
      assert.equal(e.code, "access_denied");
      assert.ok(!e.message.includes("dev-code-secret-1"));
      return true;
    },
  );
  assert.deepEqual(waits, [2000, 2000, 7000, 7000]);
  const polls = stub.requests.filter((r) => r.url.pathname === "/oauth/token");
  assert.equal(polls.length, 4);
  assert.equal(polls[0].form.get("grant_type"), DEVICE_CODE_GRANT);
  assert.equal(polls[0].form.get("device_code"), "dev-code-secret-1");

  // an expired authorization is not polled
  const expired: DeviceAuthorization = { ...auth, expires_in: 0 };
  const before = stub.requests.length;
  await assert.rejects(
    pollDeviceToken(client, expired, { wait: () => Promise.resolve() }),
    (e: unknown) => e instanceof OAuthError && e.code === "expired_token",
  );
  assert.equal(stub.requests.length, before);
  // an abort stops the waiting
  const controller = new AbortController();
  controller.abort(new Error("user left"));
  await assert.rejects(pollDeviceToken(client, auth, { signal: controller.signal }), /user left/);
});

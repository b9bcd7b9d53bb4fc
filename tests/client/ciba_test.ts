/**
 * CIBA, poll mode: against oidc-provider with `features.ciba` (the user
 * approves on their "device", here the test calling the provider's
 * `backchannelResult`), and against a stub token endpoint for the polling
 * rules oidc-provider does not exercise (`slow_down`, `Retry-After` on 503
 * and on a pending answer, a denial, the expiry). Waiting is injected: no
 * test sleeps.
 */
import assert from "node:assert/strict";
import * as oidc from "oidc-provider";
import { Client, OAuthError } from "../../mod.ts";
import {
  CIBA_GRANT,
  idTokenVerifier,
  pollBackchannelToken,
  startBackchannelAuthentication,
  userinfo,
} from "../../oidc.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";
import { json, startStub } from "./_stub.ts";

const SECRET = "ciba-secret-7d0c2a9b1e";

Deno.test("CIBA against oidc-provider: start, pending, approval on the device, token, UserInfo", async () => {
  const triggered: { request: unknown; accountId: string; bindingMessage?: string }[] = [];
  await using op = await startOidcProvider({
    clients: [{
      client_id: "call-centre",
      client_secret: SECRET,
      grant_types: [CIBA_GRANT],
      response_types: [],
      redirect_uris: [],
      backchannel_token_delivery_mode: "poll",
    }],
    configuration: {
      features: {
        userinfo: { enabled: true },
        ciba: {
          enabled: true,
          deliveryModes: ["poll"],
          processLoginHint: (_ctx: unknown, hint: string) => hint,
          validateRequestContext: () => {},
          verifyUserCode: () => {},
          triggerAuthenticationDevice: (
            ctx: { oidc: { params: { binding_message?: string } } },
            request: { accountId: string },
          ) => {
            triggered.push({
              request,
              accountId: request.accountId,
              bindingMessage: ctx.oidc.params.binding_message,
            });
          },
        },
      },
    },
  });
  const client = await Client.discover(op.issuer, "call-centre", SECRET, {
    verifyToken: idTokenVerifier({ required: true }),
  });
  assert.equal(client.options.backchannelAuthenticationUrl, `${op.issuer}/backchannel`);
  const auth = await startBackchannelAuthentication(client, {
    scope: "openid email",
    login_hint: "alice",
    binding_message: "W4SCT",
  });
  assert.equal(typeof auth.auth_req_id, "string");
  assert.equal(triggered.length, 1);
  assert.equal(triggered[0].accountId, "alice");
  assert.equal(triggered[0].bindingMessage, "W4SCT");

  const waits: number[] = [];
  const token = await pollBackchannelToken(client, auth, {
    wait: async (ms) => {
      waits.push(ms);
      if (waits.length === 2) {
        // the user approves on their device between the first and second poll
        const grant = new op.provider.Grant({ accountId: "alice", clientId: "call-centre" });
        grant.addOIDCScope("openid email");
        await grant.save();
        await op.provider.backchannelResult(triggered[0].request as never, grant as never);
      }
    },
  });
  const interval = (auth.interval ?? 5) * 1000;
  assert.deepEqual(waits, [interval, interval], "one pending poll, then the token");
  assert.equal(token.idTokenClaims?.sub, "alice");
  assert.equal((await userinfo(token)).email, "alice@example.test");

  // a denial ends polling with the provider's error
  const denied = await startBackchannelAuthentication(client, {
    scope: "openid",
    login_hint: "bob",
  });
  await op.provider.backchannelResult(
    triggered[1].request as never,
    new oidc.errors.AccessDenied(),
  );
  await assert.rejects(
    pollBackchannelToken(client, denied, { wait: async () => {} }),
    (e: unknown) => e instanceof OAuthError && e.code === "access_denied",
  );
  client.close();
});

Deno.test("CIBA polling: slow_down adds 5 s, Retry-After is honoured, the documented request", async () => {
  const answers = [
    () => json({ error: "slow_down" }, 400),
    () => json({ error: "temporarily_unavailable" }, 503, { "retry-after": "20" }),
    () => json({ error: "authorization_pending" }, 400, { "retry-after": "3" }),
    () => json({ access_token: "ciba-at-123456", token_type: "Bearer", expires_in: 60 }),
  ];
  await using stub = startStub((req) => {
    if (req.url.pathname === "/bc-authorize") {
      return json({ auth_req_id: "req-1", expires_in: 120, interval: 2 });
    }
    return answers.shift()!();
  });
  const client = new Client("cc", "cc-secret-123", {
    site: stub.url,
    tokenUrl: "/token",
    backchannelAuthenticationUrl: `${stub.url}/bc-authorize`,
  });
  const auth = await startBackchannelAuthentication(client, {
    scope: "openid",
    login_hint: "alice",
  });
  const start = stub.requests[0];
  assert.equal(start.method, "POST");
  assert.equal(start.form.get("login_hint"), "alice");
  assert.equal(start.form.get("scope"), "openid");
  assert.match(
    start.headers.get("authorization")!,
    /^Basic /,
    "the client authenticates (CIBA §7.1)",
  );

  const waits: number[] = [];
  const token = await pollBackchannelToken(client, auth, {
    wait: (ms) => Promise.resolve(void waits.push(ms)),
  });
  assert.equal(token.token, "ciba-at-123456");
  assert.deepEqual(waits, [2000, 7000, 20000, 7000]);
  for (const poll of stub.requests.slice(1)) {
    assert.equal(poll.form.get("grant_type"), "urn:openid:params:grant-type:ciba");
    assert.equal(poll.form.get("auth_req_id"), "req-1");
  }
});

Deno.test("CIBA: start refuses a request without openid or a hint; expiry ends polling", async () => {
  await using stub = startStub(() => json({ error: "authorization_pending" }, 400));
  const client = new Client("cc", "s", {
    site: stub.url,
    backchannelAuthenticationUrl: `${stub.url}/bc`,
  });
  await assert.rejects(
    startBackchannelAuthentication(client, { scope: "email", login_hint: "a" }),
    /must include openid/,
  );
  await assert.rejects(startBackchannelAuthentication(client, { scope: "openid" }), /login_hint/);
  let polls = 0;
  await assert.rejects(
    pollBackchannelToken(client, { auth_req_id: "r", expires_in: 0 }, {
      wait: () => Promise.resolve(void polls++),
    }),
    (e: unknown) => e instanceof OAuthError && e.code === "expired_token",
  );
  assert.equal(stub.requests.length, 0, "no poll once expired");
  assert.equal(polls, 1);
});

/**
 * BaseClient: requestToken answers with the token response itself, through
 * the same road and checks as Client.getToken; what it loads on demand (the
 * error classes, the private_key_jwt signer) works when it is needed. And
 * the per-request deadlines of one client: each request times out on its own.
 */
import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import * as jose from "jose";
import { BaseClient, Client, ConnectionError, OAuthError } from "../../mod.ts";
import { idTokenVerifier } from "../../oidc.ts";
import { json, startStub } from "./_stub.ts";

const SECRET = "b4se-Cl1ent-S3cret-Qx9";

Deno.test("requestToken: the token response as the provider sent it, keys in snake_case", async () => {
  await using stub = startStub((req) =>
    json({
      accessToken: "at-1",
      tokenType: "Bearer",
      expiresIn: "3600",
      scope: req.form.get("scope"),
    })
  );
  const client = new BaseClient("app", SECRET, { site: stub.url });
  const tokens = await client.requestToken({ grant_type: "client_credentials", scope: "api:read" });
  assert.deepEqual(tokens, {
    access_token: "at-1",
    token_type: "Bearer",
    expires_in: "3600",
    scope: "api:read",
  });
  const req = stub.last();
  assert.equal(req.url.pathname, "/oauth/token");
  assert.equal(req.headers.get("authorization"), `Basic ${btoa(`app:${SECRET}`)}`);
  assert.equal(req.form.get("grant_type"), "client_credentials");
  assert.ok(new Client("app", SECRET) instanceof BaseClient, "Client extends BaseClient");
});

Deno.test("requestToken: request_body and private_key_jwt (its signer loaded on demand)", async () => {
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true });
  await using stub = startStub(() => json({ access_token: "at", token_type: "Bearer" }));
  const body = new BaseClient("app", SECRET, { site: stub.url, authScheme: "request_body" });
  await body.requestToken({ grant_type: "client_credentials" });
  assert.equal(stub.last().form.get("client_secret"), SECRET);
  assert.equal(stub.last().headers.get("authorization"), null);
  const signed = new BaseClient("app", "", {
    site: stub.url,
    authScheme: "private_key_jwt",
    clientAssertionKey: privateKey as CryptoKey,
    clientAssertionAlg: "ES256",
  });
  await signed.requestToken({ grant_type: "client_credentials", client_id: "someone-else" });
  const form = stub.last().form;
  assert.deepEqual(form.getAll("client_id"), ["app"], "the client's own id, once");
  assert.equal(
    form.get("client_assertion_type"),
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
  );
  const { payload } = await jose.jwtVerify(form.get("client_assertion")!, publicKey, {
    issuer: "app",
    subject: "app",
    audience: `${stub.url}/oauth/token`,
  });
  assert.ok(payload.jti && payload.exp! - payload.iat! === 60);
});

Deno.test("requestToken: errors as Client.getToken throws them (loaded on demand)", async () => {
  await using stub = startStub((req) => {
    switch (req.form.get("grant_type")) {
      case "refused":
        return json({ error: "invalid_grant", error_description: "the code is used" }, 400);
      case "empty":
        return json({ token_type: "Bearer" });
      default:
        return new Response("<html>oops</html>", { headers: { "content-type": "text/html" } });
    }
  });
  const client = new BaseClient("app", SECRET, { site: stub.url });
  const rejects = (grant: string, code: string, message: RegExp) =>
    assert.rejects(client.requestToken({ grant_type: grant, code: "c0de-Secret-42" }), (e) => {
      assert.ok(e instanceof OAuthError, String(e));
      assert.equal(e.code, code);
      assert.match(e.message, message);
      assert.ok(!e.message.includes(SECRET));
      assert.ok(e.response.status >= 200);
      return true;
    });
  await rejects("refused", "invalid_grant", /^invalid_grant: the code is used/);
  await rejects("empty", "invalid_token_response", /holds no access token/);
  await rejects("html", "invalid_token_response", /neither a JSON object nor form-encoded/);
  const gone = new BaseClient("app", SECRET, { site: "http://127.0.0.1:1" });
  await assert.rejects(gone.requestToken({ grant_type: "client_credentials" }), (e) => {
    assert.ok(e instanceof ConnectionError && e.kind === "network", String(e));
    return true;
  });
});

Deno.test("requestToken: the sender-constraint rule of FAPI 2.0; a client with verifyToken is refused", async () => {
  await using stub = startStub(() => json({ access_token: "at", token_type: "Bearer" }));
  const fapi = new BaseClient("app", SECRET, { site: stub.url, profile: "fapi2" });
  await assert.rejects(
    fapi.requestToken({ grant_type: "client_credentials" }),
    (e) => e instanceof OAuthError && e.code === "invalid_token_type",
  );
  const verifying = new BaseClient("app", SECRET, {
    site: stub.url,
    verifyToken: idTokenVerifier(),
  });
  await assert.rejects(
    verifying.requestToken({ grant_type: "client_credentials" }),
    (e) => e instanceof TypeError && /Client\.getToken/.test(e.message),
  );
  await assert.rejects(
    new BaseClient("app", SECRET, { site: stub.url }).requestToken("x" as never),
    (e) => e instanceof TypeError && /"params"/.test(e.message),
  );
  assert.equal(stub.requests.length, 1, "only the FAPI client's request was sent");
});

Deno.test("BaseClient hides its secrets from inspection and JSON", () => {
  const client = new BaseClient("app", SECRET, {
    site: "https://id.example.com",
    connectionOpts: { key: "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----" },
  });
  for (const shown of [Deno.inspect(client), JSON.stringify(client)]) {
    assert.ok(!shown.includes(SECRET) && !shown.includes("MIIB"), shown);
    assert.match(shown, /\[FILTERED\]/);
  }
  assert.match(Deno.inspect(client), /^BaseClient /);
  assert.match(Deno.inspect(new Client("app", SECRET)), /^Client /);
});

Deno.test("each request of a client times out on its own deadline", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "Date"] });
  try {
    const answers = new Map<string, (r: Response) => void>();
    const aborted: string[] = [];
    const client = new BaseClient("app", SECRET, {
      site: "https://provider.invalid",
      connectionOpts: {
        timeout: 5000,
        // a provider that answers only when told to; the grant names the request
        fetch: (input) => {
          const request = input as Request;
          return new Promise((resolve, reject) => {
            request.text().then((text) => {
              const name = new URLSearchParams(text).get("grant_type")!;
              answers.set(name, resolve);
              request.signal.addEventListener("abort", () => {
                aborted.push(name);
                reject(request.signal.reason);
              });
            });
          });
        },
      },
    });
    const outcome = new Map<string, unknown>();
    const run = (grant: string) =>
      client.requestToken({ grant_type: grant }).then(
        (v) => outcome.set(grant, v),
        (e) => outcome.set(grant, e),
      );
    const first = run("first");
    await clock.tickAsync(1000);
    const second = run("second");
    const third = run("third");
    await clock.tickAsync(1000);
    answers.get("third")!(json({ access_token: "t3" }));
    await third;
    await clock.tickAsync(2999); // 4,999 ms after the first request started
    assert.deepEqual(aborted, []);
    await clock.tickAsync(1);
    await first;
    assert.deepEqual(aborted, ["first"]);
    await clock.tickAsync(999);
    assert.deepEqual(aborted, ["first"], "the second request has 1,000 ms to go");
    await clock.tickAsync(1);
    await second;
    assert.deepEqual(aborted, ["first", "second"], "the third, answered, is never aborted");
    for (const grant of ["first", "second"]) {
      const e = outcome.get(grant);
      assert.ok(e instanceof ConnectionError && e.kind === "timeout", String(e));
    }
    assert.deepEqual(outcome.get("third"), { access_token: "t3" });
  } finally {
    clock.uninstall();
  }
});

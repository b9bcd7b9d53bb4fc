/** Provider quirks (docs/client.md, "The grants"), served by local stubs. */
import assert from "node:assert/strict";
import { Client, ConnectionError, OAuthError, SnakyHash } from "../../mod.ts";
import { json, startStub } from "./_stub.ts";

const SECRET = "s3cr3t-Zq8vLw2mPx9K";

Deno.test("camelCase fields, expires_in as a string and no token_type are accepted", async () => {
  await using stub = startStub(() =>
    json({ accessToken: "at-camel", refreshToken: "rt-camel", expiresIn: "3600", Scope: "a b" })
  );
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.clientCredentials.getToken();
  assert.equal(token.token, "at-camel");
  assert.equal(token.refreshToken, "rt-camel");
  assert.equal(token.expiresIn, 3600);
  const now = Math.floor(Date.now() / 1000);
  assert.ok(Math.abs(token.expiresAt! - (now + 3600)) <= 2);
  assert.equal(token.params.scope, "a b");
  assert.equal(token.params.token_type, undefined);
  assert.equal(token.headers().Authorization, "Bearer at-camel");
});

Deno.test("form-encoded token responses are parsed", async () => {
  await using stub = startStub(() =>
    new Response("access_token=at-form&expires_in=60&token_type=bearer&foo_bar=baz", {
      headers: { "content-type": "application/x-www-form-urlencoded" },
    })
  );
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.getToken({ grant_type: "client_credentials" });
  assert.equal(token.token, "at-form");
  assert.equal(token.expiresIn, 60);
  assert.equal(token.params.foo_bar, "baz");
  assert.ok(token.response?.parsed instanceof SnakyHash);
});

Deno.test("JSON served as text/plain is still read as a token", async () => {
  await using stub = startStub(() =>
    new Response('{"access_token":"at-text","expires_in":10}', {
      headers: { "content-type": "text/plain" },
    })
  );
  const client = new Client("id", SECRET, { site: stub.url });
  assert.equal((await client.clientCredentials.getToken()).token, "at-text");
});

Deno.test("an error body with status 200 is an OAuthError", async () => {
  await using stub = startStub(() =>
    json({ error: "bad_verification_code", error_description: "The code is wrong" })
  );
  const client = new Client("id", SECRET, { site: stub.url });
  await assert.rejects(client.authCode.getToken("c0de"), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.equal(e.code, "bad_verification_code");
    assert.equal(e.description, "The code is wrong");
    assert.equal(e.response.status, 200);
    return true;
  });
});

Deno.test("a token response without a token is an OAuthError naming the problem", async () => {
  await using stub = startStub(() => json({ token_type: "bearer" }));
  const client = new Client("id", SECRET, { site: stub.url });
  await assert.rejects(client.clientCredentials.getToken(), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.equal(e.code, "invalid_token_response");
    assert.match(e.message, /no access token/);
    return true;
  });
});

Deno.test("an HTML error page is an OAuthError whose message is the body", async () => {
  await using stub = startStub(() =>
    new Response("<h1>Bad Gateway</h1>", { status: 502, headers: { "content-type": "text/html" } })
  );
  const client = new Client("id", SECRET, { site: stub.url });
  await assert.rejects(client.clientCredentials.getToken(), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.equal(e.code, undefined);
    assert.equal(e.message, "<h1>Bad Gateway</h1>");
    assert.equal(e.response.status, 502);
    return true;
  });
});

Deno.test("standard error body: message is code: description, then the body", async () => {
  const body = { error: "invalid_grant", error_description: "expired code" };
  await using stub = startStub(() => json(body, 400));
  const client = new Client("id", SECRET, { site: stub.url });
  await assert.rejects(client.authCode.getToken("abc"), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.equal(e.message, `invalid_grant: expired code\n${JSON.stringify(body)}`);
    return true;
  });
});

Deno.test("a provider that wants the token in the query (mode query)", async () => {
  await using stub = startStub((req) =>
    req.url.pathname === "/oauth/token"
      ? json({ access_token: "qtok-12345", token_type: "bearer" })
      : req.url.searchParams.get("oauth_token") === "qtok-12345" &&
          !req.headers.has("authorization")
      ? json([{ id: 1 }, { id: 2 }])
      : json({ error: "unauthorized" }, 401)
  );
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.clientCredentials.getToken({}, {
    mode: "query",
    param_name: "oauth_token",
  });
  const res = await token.get("/items", { params: { page: 2 } });
  assert.deepEqual(res.parsed, [{ id: 1 }, { id: 2 }]);
  assert.equal(stub.last().url.searchParams.get("page"), "2");
});

Deno.test("a custom header format (token scheme)", async () => {
  await using stub = startStub((req) =>
    req.url.pathname === "/oauth/token"
      ? json({ access_token: "tok-42" })
      : json({ auth: req.headers.get("authorization") })
  );
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.clientCredentials.getToken({}, { header_format: "token %s" });
  assert.equal(((await token.get("/me")).parsed as { auth: string }).auth, "token tok-42");
});

Deno.test("refresh keeps the refresh token when the response omits it; one refresh in flight", async () => {
  let refreshes = 0;
  await using stub = startStub(async (req) => {
    if (req.form.get("grant_type") === "refresh_token") {
      refreshes++;
      await new Promise((r) => setTimeout(r, 30));
      return json({ access_token: `at-${refreshes + 1}`, expires_in: 60 });
    }
    return json({ access_token: "at-1", refresh_token: "rt-keep", expires_in: 60 });
  });
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.password.getToken("alice", "pa55word-Very-Secret");
  assert.equal(stub.last().form.get("username"), "alice");
  const [a, b, c] = await Promise.all([token.refresh(), token.refresh(), token.refresh()]);
  assert.equal(refreshes, 1, "concurrent refreshes share one request");
  assert.equal(a, b);
  assert.equal(b, c);
  assert.equal(a.token, "at-2");
  assert.equal(a.refreshToken, "rt-keep");
  assert.equal(stub.last().form.get("refresh_token"), "rt-keep");
  const later = await a.refresh();
  assert.equal(later.token, "at-3");
  assert.equal(refreshes, 2);
});

Deno.test("refresh carries mode and header_format over to the new token", async () => {
  await using stub = startStub(() => json({ access_token: "x", refresh_token: "r" }));
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.clientCredentials.getToken({}, { header_format: "MAC %s" });
  const fresh = await token.refresh();
  assert.equal(fresh.headers().Authorization, "MAC x");
});

Deno.test("a token without refresh token cannot refresh", async () => {
  await using stub = startStub(() => json({ access_token: "x" }));
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.clientCredentials.getToken();
  await assert.rejects(token.refresh(), /refresh_token is not available/);
  assert.equal(stub.requests.length, 1);
});

Deno.test("getToken: snakyHashClass and snaky false reach the parsed token response", async () => {
  await using stub = startStub(() =>
    json({ accessToken: "a1", expiresIn: 30, extraField: { innerKey: 1 } })
  );
  class ProviderHash extends SnakyHash {}
  const client = new Client("id", SECRET, { site: stub.url });
  const token = await client.clientCredentials.getToken({ snakyHashClass: ProviderHash });
  assert.ok(token.response?.parsed instanceof ProviderHash);
  assert.deepEqual(token.params.extra_field, { inner_key: 1 });
  assert.equal(stub.last().form.get("snakyHashClass"), null, "library keys are not sent");
  const raw = await client.clientCredentials.getToken({ snaky: false });
  assert.equal(raw.token, "a1", "camelCase accessToken is found without snake_case");
  assert.deepEqual(raw.params.extraField, { innerKey: 1 });
  const res = await client.request("get", "/x", { snaky: false });
  assert.deepEqual(res.parsed, { accessToken: "a1", expiresIn: 30, extraField: { innerKey: 1 } });
});

Deno.test("an aborted request is a ConnectionError of kind aborted", async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  await using stub = startStub(async () => {
    await released;
    return json({});
  });
  const client = new Client("id", SECRET, { site: stub.url });
  const controller = new AbortController();
  const pending = client.request("get", "/slow", { signal: controller.signal });
  setTimeout(() => controller.abort(), 20);
  await assert.rejects(pending, (e: unknown) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.kind, "aborted");
    assert.match(e.message, /GET http:\/\/127\.0\.0\.1:\d+\/slow failed: aborted/);
    return true;
  });
  release();
});

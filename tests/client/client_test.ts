/** Client: URL rules, requests, redirects, connection options, client authentication. */
import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { Client, ConnectionError, OAuthError, type OAuthResponse } from "../../mod.ts";
import { json, startStub } from "./_stub.ts";

const SECRET = "cl1ent-S3cret-Hx7Qp2Vn";

Deno.test("URL resolution: relative to the site's path, leading slash on the host, absolute as given", () => {
  const c = new Client("id", SECRET, { site: "https://id.example.com/tenant/v2" });
  assert.equal(c.authorizeUrl(), "https://id.example.com/tenant/v2/oauth/authorize");
  assert.equal(c.tokenUrl(), "https://id.example.com/tenant/v2/oauth/token");
  assert.equal(c.revokeUrl(), "https://id.example.com/tenant/v2/oauth/revoke");
  const d = new Client("id", SECRET, {
    site: "https://id.example.com/tenant/",
    authorizeUrl: "/authorize",
    tokenUrl: "https://other.example.net/t?x=1",
  });
  assert.equal(d.authorizeUrl(), "https://id.example.com/authorize");
  assert.equal(d.tokenUrl(), "https://other.example.net/t?x=1");
  // spaces as %20, as the gem (Faraday) writes them
  assert.equal(d.authorizeUrl({ a: "b c" }), "https://id.example.com/authorize?a=b%20c");
  assert.throws(() => new Client("id", SECRET).tokenUrl(), /relative .* no "site"/);
});

Deno.test("URL resolution: a path never reaches another host", async () => {
  await using other = startStub(() => json({ reached: "other" }));
  await using stub = startStub((req) => json({ path: req.url.pathname }));
  const otherHost = new URL(other.url).host;
  const c = new Client("id", SECRET, { site: `${stub.url}/base` });
  // rule 2 literally: a leading "/" is a path on the site's host, even "//host/..."
  const res = await c.request("get", `//${otherHost}/x`);
  assert.deepEqual((res.parsed as { toObject(): unknown }).toObject(), {
    path: `//${otherHost}/x`,
  });
  // what the URL parser would read as another host is refused, naming the path
  for (const path of [`\\\\${otherHost}/x`, `/\\${otherHost}/x`, ` ${other.url}/x`]) {
    if (path.startsWith("/")) {
      const r = await c.request("get", path);
      assert.equal(new URL(r.response.url).host, new URL(stub.url).host, path);
      continue;
    }
    await assert.rejects(c.request("get", path), (e: unknown) => {
      assert.ok(e instanceof TypeError);
      assert.match(e.message, /is not a path on the site's host/);
      return true;
    });
  }
  assert.equal(other.requests.length, 0);
  // an absolute URL is still sent as given (the caller's allowlist: docs/client.md, "Limits")
  const abs = await c.request("get", `${other.url}/x`);
  assert.equal((abs.parsed as { reached: string }).reached, "other");
});

Deno.test("authorize URLs of authCode and implicit", () => {
  const c = new Client("my id", SECRET, {
    site: "https://id.example.com",
    redirectUri: "https://app.example.com/cb?x=1",
  });
  const code = new URL(c.authCode.authorizeUrl({ scope: "openid email", state: "s" }));
  assert.equal(code.searchParams.get("client_id"), "my id");
  assert.equal(code.searchParams.get("response_type"), "code");
  assert.equal(code.searchParams.get("redirect_uri"), "https://app.example.com/cb?x=1");
  assert.match(code.search, /redirect_uri=https%3A%2F%2Fapp\.example\.com%2Fcb%3Fx%3D1/);
  assert.equal(code.searchParams.get("scope"), "openid email");
  const implicit = new URL(c.implicit.authorizeUrl({ redirect_uri: "https://b/cb" }));
  assert.equal(implicit.searchParams.get("response_type"), "token");
  assert.equal(implicit.searchParams.get("redirect_uri"), "https://b/cb");
  assert.throws(() => c.implicit.getToken(), /fromKvform/);
});

Deno.test("basic_auth form-encodes id and secret (RFC 6749 §2.3.1)", async () => {
  await using stub = startStub(() => json({ access_token: "t" }));
  const client = new Client("id:with space", "p@ss/wörd+", { site: stub.url });
  await client.clientCredentials.getToken({ scope: "a b", resource: "https://api.example" });
  const req = stub.last();
  const [id, secret] = atob(req.headers.get("authorization")!.slice(6)).split(":");
  assert.equal(decodeURIComponent(id.replace(/\+/g, " ")), "id:with space");
  assert.equal(decodeURIComponent(secret.replace(/\+/g, " ")), "p@ss/wörd+");
  assert.equal(req.method, "POST");
  assert.equal(req.headers.get("content-type"), "application/x-www-form-urlencoded");
  assert.equal(req.form.get("grant_type"), "client_credentials");
  assert.equal(req.form.get("resource"), "https://api.example");
  assert.equal(req.form.get("client_secret"), null);
});

Deno.test("request_body and tls_client_auth put client_id in the body", async () => {
  await using stub = startStub(() => json({ access_token: "t" }));
  await new Client("id-1", SECRET, { site: stub.url, authScheme: "request_body" })
    .clientCredentials.getToken();
  assert.equal(stub.last().form.get("client_id"), "id-1");
  assert.equal(stub.last().form.get("client_secret"), SECRET);
  assert.equal(stub.last().headers.get("authorization"), null);
  await new Client("id-2", "", { site: stub.url, authScheme: "tls_client_auth" })
    .clientCredentials.getToken();
  assert.equal(stub.last().form.get("client_id"), "id-2");
  assert.equal(stub.last().form.get("client_secret"), null);
  assert.equal(stub.last().headers.get("authorization"), null);
});

Deno.test("tokenMethod get and post_with_query_string; extra headers reach the provider", async () => {
  await using stub = startStub(() => json({ access_token: "t" }));
  const get = new Client("id", SECRET, { site: stub.url, tokenMethod: "get" });
  await get.clientCredentials.getToken({ scope: "x", headers: { "X-Trace": "42" } });
  assert.equal(stub.last().method, "GET");
  assert.equal(stub.last().url.searchParams.get("grant_type"), "client_credentials");
  assert.equal(stub.last().url.searchParams.get("scope"), "x");
  assert.equal(stub.last().headers.get("x-trace"), "42");
  const pwq = new Client("id", SECRET, { site: stub.url, tokenMethod: "post_with_query_string" });
  await pwq.clientCredentials.getToken();
  assert.equal(stub.last().method, "POST");
  assert.equal(stub.last().url.searchParams.get("grant_type"), "client_credentials");
  assert.equal(stub.last().body, "");
});

Deno.test("request: any verb, query params, form, JSON and byte bodies", async () => {
  await using stub = startStub((req) => json({ method: req.method, body: req.body }));
  const client = new Client("id", SECRET, { site: `${stub.url}/api/` });
  for (const verb of ["get", "post", "put", "patch", "delete", "options"] as const) {
    const res = await client.request(verb, "things", { params: { q: "1", tag: ["a", "b"] } });
    assert.equal((res.parsed as { method: string }).method, verb.toUpperCase());
    assert.equal(stub.last().url.pathname, "/api/things");
    assert.equal(stub.last().url.search, "?q=1&tag=a&tag=b");
  }
  const head = await client.request("head", "things");
  assert.equal(head.status, 200);
  await client.request("post", "f", { body: { a: "1", b: ["x", "y"] } });
  assert.equal(stub.last().body, "a=1&b=x&b=y");
  assert.equal(stub.last().headers.get("content-type"), "application/x-www-form-urlencoded");
  await client.request("post", "j", {
    body: { a: 1 },
    headers: { "Content-Type": "application/json" },
  });
  assert.equal(stub.last().body, '{"a":1}');
  await client.request("put", "b", { body: new TextEncoder().encode("raw") });
  assert.equal(stub.last().body, "raw");
});

Deno.test("raiseErrors false attaches the OAuthError to the response", async () => {
  await using stub = startStub(() => json({ error: "nope", error_description: "denied" }, 403));
  const client = new Client("id", SECRET, { site: stub.url, raiseErrors: false });
  const res = await client.request("get", "/x");
  assert.equal(res.status, 403);
  assert.ok(res.error instanceof OAuthError);
  assert.equal(res.error.code, "nope");
  assert.equal(res.error.response, res);
  await assert.rejects(client.request("get", "/x", { raiseErrors: true }), OAuthError);
  const ok = await new Client("id", SECRET, { site: stub.url }).request("get", "/x", {
    raiseErrors: false,
  });
  assert.equal(ok.error?.description, "denied");
});

Deno.test("redirects: followed, 303 becomes GET, another origin gets no Authorization", async () => {
  await using other = startStub((req) => json({ auth: req.headers.get("authorization") }));
  await using stub = startStub((req) => {
    switch (req.url.pathname) {
      case "/see-other":
        return new Response(null, { status: 303, headers: { location: "/final" } });
      case "/temp":
        return new Response(null, { status: 307, headers: { location: "/final" } });
      case "/away":
        return new Response(null, { status: 302, headers: { location: `${other.url}/x` } });
      case "/loop":
        return new Response(null, { status: 302, headers: { location: "/loop" } });
      default:
        return json({ method: req.method, body: req.body, auth: req.headers.get("authorization") });
    }
  });
  const client = new Client("id", SECRET, { site: stub.url });
  const headers = { Authorization: "Bearer tok" };
  let res = await client.request("post", "/see-other", { body: "a=1", headers });
  assert.deepEqual(res.parsed?.valueOf() && (res.parsed as { toObject(): unknown }).toObject(), {
    method: "GET",
    body: "",
    auth: "Bearer tok",
  });
  res = await client.request("post", "/temp", { body: "a=1", headers });
  assert.equal((res.parsed as { method: string }).method, "POST");
  assert.equal((res.parsed as { body: string }).body, "a=1");
  res = await client.request("get", "/away", { headers });
  assert.equal((res.parsed as { auth: string | null }).auth, null);
  // past maxRedirects the last redirect is the answer (as the gem does)
  res = await client.request("get", "/loop");
  assert.equal(res.status, 302);
  assert.equal(res.headers.get("location"), "/loop");
  assert.equal(stub.requests.filter((r) => r.url.pathname === "/loop").length, 6);
  const none = new Client("id", SECRET, { site: stub.url, maxRedirects: 0 });
  assert.equal((await none.request("get", "/temp")).status, 307);
});

Deno.test("a token endpoint's 307 to another origin is refused: the grant and secret stay home", async () => {
  await using other = startStub(() => json({ access_token: "stolen" }));
  await using stub = startStub(() =>
    new Response(null, { status: 307, headers: { location: `${other.url}/token` } })
  );
  const client = new Client("id", SECRET, { site: stub.url, authScheme: "request_body" });
  await assert.rejects(client.password.getToken("ann", "her password"), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.equal(e.code, "cross_origin_redirect");
    assert.match(e.message, /another origin .* status 307/);
    assert.ok(!e.message.includes(SECRET));
    return true;
  });
  await assert.rejects(client.revokeToken("tok-123456"), /cross_origin_redirect/);
  assert.equal(other.requests.length, 0);
  // a plain request may follow it (without Authorization), as before
  const res = await client.request("post", "/x", { body: "a=1" });
  assert.equal((res.parsed as { access_token: string }).access_token, "stolen");
});

Deno.test("timeout: a slow provider gives a ConnectionError naming the URL and the timeout", async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  await using stub = startStub(async () => {
    await released;
    return json({ access_token: "late" });
  });
  const client = new Client("id", SECRET, {
    site: stub.url,
    connectionOpts: { timeout: 50 },
    authScheme: "request_body",
  });
  const started = Date.now();
  await assert.rejects(client.clientCredentials.getToken(), (e: unknown) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.kind, "timeout");
    assert.equal(e.url, `${stub.url}/oauth/token`);
    assert.match(e.message, /POST http:\/\/127\.0\.0\.1:\d+\/oauth\/token failed: .*50 ms/);
    assert.ok(!e.message.includes(SECRET));
    return true;
  });
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 49 && elapsed < 2000, `timed out after ${elapsed} ms`);
  release();
});

Deno.test("every request has a finite default timeout of 30 s (connectionOpts.timeout changes it)", async () => {
  // A provider that never answers, on a fake clock: each request is aborted when its own
  // timeout has passed, not a moment sooner, and the adapter sees the abort.
  const clock = FakeTimers.withGlobal(globalThis).install({
    toFake: ["setTimeout", "clearTimeout", "performance", "Date"],
  });
  try {
    const outcomes: unknown[] = [];
    const signals: AbortSignal[] = [];
    const silent = (input: RequestInfo | URL) =>
      new Promise<Response>((_, reject) => {
        const signal = (input as Request).signal;
        signals.push(signal);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    const client = new Client("id", SECRET, {
      site: "https://provider.invalid",
      connectionBuild: (b) => void b.adapter(silent),
    });
    const quick = new Client("id", SECRET, {
      site: "https://provider.invalid",
      connectionOpts: { timeout: 1234, fetch: silent },
    });
    assert.equal(client.options.connectionOpts.timeout, undefined);
    const settle = (p: Promise<unknown>) =>
      p.then((v) => outcomes.push(v), (e) => outcomes.push(e));
    const requests = [
      settle(client.clientCredentials.getToken()),
      settle(quick.clientCredentials.getToken()),
    ];
    await clock.tickAsync(1233);
    assert.equal(outcomes.length, 0);
    await clock.tickAsync(1);
    await requests[1];
    assert.equal(outcomes.length, 1, "the 1234 ms request is aborted at 1234 ms");
    await clock.tickAsync(30_000 - 1234 - 1);
    assert.equal(outcomes.length, 1, "the default request is still waiting at 29,999 ms");
    await clock.tickAsync(1);
    await requests[0];
    for (const e of outcomes) {
      assert.ok(e instanceof ConnectionError && e.kind === "timeout", String(e));
    }
    assert.match(String(outcomes[0]), /timeout of 1234 ms/);
    assert.match(String(outcomes[1]), /timeout of 30000 ms/);
    assert.ok(signals.length === 2 && signals.every((s) => s.aborted), "the adapter saw the abort");
  } finally {
    clock.uninstall();
  }
});

Deno.test("expires_in counts from when the token request was sent, not from when the answer came", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({
    now: 1_700_000_000_000,
    toFake: ["setTimeout", "clearTimeout", "Date"],
  });
  try {
    let answer!: (res: Response) => void;
    const client = new Client("id", SECRET, {
      site: "https://provider.invalid",
      connectionOpts: { fetch: () => new Promise<Response>((r) => answer = r) },
    });
    const pending = client.clientCredentials.getToken();
    await clock.tickAsync(5_000); // the provider takes 5 s to answer
    answer(json({ access_token: "at", token_type: "Bearer", expires_in: 60 }));
    const token = await pending;
    assert.equal(token.expiresAt, 1_700_000_000 + 60);
  } finally {
    clock.uninstall();
  }
});

Deno.test("connectionOpts: default headers, fetch adapter; connectionBuild: middleware in order", async () => {
  const order: string[] = [];
  const seen: Request[] = [];
  const client = new Client("id", SECRET, {
    site: "https://provider.invalid",
    connectionOpts: {
      headers: { "User-Agent": "my-app/1.0" },
      fetch: (input) => {
        seen.push(input as Request);
        return Promise.resolve(json({ access_token: "from-adapter" }));
      },
    },
    connectionBuild: (b) => {
      b.use(async (req, next) => {
        order.push("a");
        const res = await next(
          new Request(req, { headers: { ...Object.fromEntries(req.headers), "x-a": "1" } }),
        );
        order.push("a-done");
        return res;
      }).use((req, next) => {
        order.push(`b:${req.headers.get("x-a")}`);
        return next(req);
      });
    },
  });
  const token = await client.clientCredentials.getToken();
  assert.equal(token.token, "from-adapter");
  assert.deepEqual(order, ["a", "b:1", "a-done"]);
  assert.equal(seen[0].headers.get("user-agent"), "my-app/1.0");
  assert.equal(seen[0].url, "https://provider.invalid/oauth/token");

  const replaced = new Client("id", SECRET, {
    site: "https://provider.invalid",
    connectionBuild: (b) => void b.adapter(() => Promise.resolve(json({ access_token: "b" }))),
  });
  assert.equal((await replaced.clientCredentials.getToken()).token, "b");
});

Deno.test("revokeToken sends token and hint with client authentication", async () => {
  await using stub = startStub(() => new Response(null, { status: 200 }));
  const client = new Client("id", SECRET, { site: stub.url, authScheme: "request_body" });
  const res: OAuthResponse = await client.revokeToken("rt-123", "refresh_token");
  assert.equal(res.status, 200);
  assert.equal(stub.last().url.pathname, "/oauth/revoke");
  assert.equal(stub.last().form.get("token"), "rt-123");
  assert.equal(stub.last().form.get("token_type_hint"), "refresh_token");
  assert.equal(stub.last().form.get("client_secret"), SECRET);
});

Deno.test("wrong argument types give a TypeError naming the argument", async () => {
  const bad = (fn: () => unknown, name: RegExp) =>
    assert.throws(fn, (e: unknown) => e instanceof TypeError && name.test(e.message));
  bad(() => new Client(1 as unknown as string, SECRET), /"id"/);
  bad(() => new Client("id", undefined as unknown as string), /"secret"/);
  bad(() => new Client("id", SECRET, "x" as never), /"options"/);
  bad(() => new Client("id", SECRET, { site: "not a url" }), /"site"/);
  bad(() => new Client("id", SECRET, { authScheme: "magic" as never }), /"authScheme"/);
  bad(() => new Client("id", SECRET, { tokenMethod: "put" as never }), /"tokenMethod"/);
  bad(() => new Client("id", SECRET, { maxRedirects: -1 }), /"maxRedirects"/);
  bad(() => new Client("id", SECRET, { connectionOpts: { timeout: "5" as never } }), /timeout/);
  bad(() => new Client("id", SECRET, { logger: {} as never }), /"logger"/);
  bad(() => new Client("id", SECRET, { authScheme: "private_key_jwt" }), /clientAssertionKey/);
  const c = new Client("id", SECRET, { site: "http://127.0.0.1:1" });
  const rejects = (p: Promise<unknown>, name: RegExp) =>
    assert.rejects(p, (e: unknown) => e instanceof TypeError && name.test(e.message));
  await rejects(c.request("fetch" as never, "/"), /"verb"/);
  await rejects(c.request("get", 42 as never), /"url"/);
  await rejects(c.getToken(null as never), /"params"/);
  await rejects(c.authCode.getToken(undefined as never), /"code"/);
  await rejects(c.password.getToken("u", 5 as never), /"password"/);
  await rejects(c.clientCredentials.getToken("scope" as never), /"params"/);
  await rejects(c.assertion.getToken({}, { algorithm: "none", key: "k" }), /algorithm "none"/);
  await rejects(c.assertion.getToken(null as never, { algorithm: "HS256", key: "k" }), /"claims"/);
  await rejects(c.revokeToken(7 as never), /"token"/);
});

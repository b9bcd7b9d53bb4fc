/**
 * Port of ruby-oauth/oauth2 spec/oauth2/client_spec.rb: one Deno test per
 * example, named "client_spec.rb: <context> <example>".
 *
 * Documented differences (asserted as our equivalent where the example is
 * ported): options are camelCase and `client.options` holds them; requests
 * and token calls return Promises; debug output goes to the client's
 * `logger` as "oauth2 request: GET <url>" / "oauth2 response: <status> <url>"
 * with headers and body lines; a body is decoded as UTF-8 (no Ruby
 * re-encoding); an invalid JSON error body stays text inside the OAuthError
 * (no JSON::ParserError); `getToken` always rejects with an OAuthError for an
 * error status or a response without a token, whatever `raiseErrors` says
 * (the gem returns nil with raise_errors false: we promise an AccessToken);
 * `snakyHashClass` must be SnakyHash or a subclass; a protocol-relative
 * Location (`//host/path`) is resolved by the URL standard to that host, so
 * the cross-origin rule removes the credentials (the gem rewrites it into a
 * same-origin path `///host/path`).
 * Not ported: Faraday internals (`connection.host`, `ssl`, middleware
 * handlers, FlatParamsEncoder), `site=` (a client's site is fixed: make a new
 * client), `access_token_class` and `extract_access_token` (no such options),
 * Faraday request blocks, a status of 600 (fetch cannot represent it), the
 * private `resolve_redirect_location`/`sanitize_redirect_options` helpers,
 * XML parsing (no XML dependency).
 */
import assert from "node:assert/strict";
import {
  AccessToken,
  Client,
  type ClientOptions,
  configure,
  ConnectionError,
  OAuthError,
  OAuthResponse,
  SnakyHash,
} from "../../../mod.ts";
import { captureLogger, stubbedClient, type Stubs } from "./_faraday.ts";

const S = "client_spec.rb";
const JSONCT = { "Content-Type": "application/json" };

function instance(options: ClientOptions = {}) {
  return stubbedClient("abc", "def", { site: "https://api.example.com", ...options }, (stub) => {
    stub.get("/success", () => [200, { "Content-Type": "text/awesome" }, "yay"]);
    stub.get("/reflect", (env) => [200, {}, env.body]);
    stub.post("/reflect", (env) => [200, {}, env.body]);
    stub.get("/unauthorized", () => [
      401,
      JSONCT,
      JSON.stringify({ error: "invalid_token", error_description: "bad bad token" }),
    ]);
    stub.get("/conflict", () => [409, { "Content-Type": "text/plain" }, "not authorized"]);
    stub.get("/redirect", () => [302, { "Content-Type": "text/plain", location: "/success" }, ""]);
    stub.get(
      "/protocol_relative_redirect",
      () => [302, { location: "//attacker.example/leak" }, ""],
    );
    stub.get(
      "/absolute_cross_origin_redirect",
      () => [302, { location: "https://attacker.example/leak" }, ""],
    );
    stub.get(
      "/same_origin_absolute_redirect",
      () => [302, { location: "https://api.example.com/leak" }, ""],
    );
    stub.get("/leak", (env) => [
      200,
      {},
      JSON.stringify({
        auth: env.requestHeaders.get("authorization"),
        marker: env.requestHeaders.get("x-marker"),
        url: env.url.href,
      }),
    ]);
    stub.get("/redirect_no_loc", () => [302, { "Content-Type": "text/plain" }, ""]);
    stub.post(
      "/redirect",
      () => [303, { "Content-Type": "text/plain", location: "/reflect_303" }, ""],
    );
    stub.get(
      "/reflect_303",
      (
        env,
      ) => [
        200,
        {},
        JSON.stringify({
          body: env.body || null,
          method: env.method.toLowerCase(),
          url: env.url.href,
        }),
      ],
    );
    stub.get("/error", () => [500, { "Content-Type": "text/plain" }, "unknown error"]);
    stub.get("/unparsable_error", () => [500, JSONCT, "unknown error"]);
    stub.get("/empty_get", () => [204, {}, null]);
    stub.get(
      "/different_encoding",
      () => [500, JSONCT, '{"error":"invalid_token","error_description":"\u221e"}'],
    );
    stub.get(
      "/ascii_8bit_encoding",
      () => [500, JSONCT, JSON.stringify({ error: "invalid_request", error_description: "é" })],
    );
    stub.post("/oauth/revoke", (env) => [200, { "Content-type": "application/json" }, env.body]);
  });
}
const subject = (o: ClientOptions = {}) => instance(o).client;

function stubbed(params: ClientOptions, define: (s: Stubs) => void) {
  return stubbedClient("abc", "def", { site: "https://api.example.com", ...params }, define);
}
const tokenJson = () =>
  [200, JSONCT, JSON.stringify({ access_token: "the-token" })] as [
    number,
    Record<string, string>,
    string,
  ];

// #initialize
const I = `${S}: #initialize`;
Deno.test(`${I} assigns id and secret`, () => {
  const c = subject();
  assert.equal(c.id, "abc");
  assert.equal(c.secret, "def");
});
Deno.test(`${I} assigns site from the options hash`, () =>
  assert.equal(subject().site, "https://api.example.com"));
Deno.test(`${I} is able to pass a block to configure the connection (connectionBuild)`, () => {
  let adapterSet = false;
  new Client("abc", "def", {
    connectionBuild: (b) => {
      b.adapter(fetch);
      adapterSet = true;
    },
  });
  assert.ok(adapterSet);
});
Deno.test(`${I} defaults raise_errors to true`, () =>
  assert.equal(subject().options.raiseErrors, true));
Deno.test(`${I} allows true/false for raise_errors option`, () => {
  assert.equal(new Client("abc", "def", { raiseErrors: false }).options.raiseErrors, false);
  assert.equal(new Client("abc", "def", { raiseErrors: true }).options.raiseErrors, true);
});
Deno.test(`${I} allows override of raise_errors option`, async () => {
  const { client } = stubbed(
    { raiseErrors: true },
    (s) => s.get("/notfound", () => [404, {}, null]),
  );
  await assert.rejects(client.request("get", "/notfound"), OAuthError);
  assert.equal((await client.request("get", "/notfound", { raiseErrors: false })).status, 404);
});
Deno.test(`${I} allows get/post for access_token_method option (tokenMethod)`, () => {
  assert.equal(new Client("abc", "def", { tokenMethod: "get" }).options.tokenMethod, "get");
  assert.equal(new Client("abc", "def", { tokenMethod: "post" }).options.tokenMethod, "post");
});
Deno.test(`${I} does not mutate the opts hash argument`, () => {
  const opts = { site: "http://example.com/" };
  const before = { ...opts };
  new Client("abc", "def", opts);
  assert.deepEqual(opts, before);
});
Deno.test(`${I} raises exception if JSON is expected, but server returns invalid JSON (an OAuthError with the text)`, async () => {
  const c = subject();
  await assert.rejects(c.request("get", "/unparsable_error"), /unknown error/);
  assert.equal((await c.request("get", "/unparsable_error", { raiseErrors: false })).status, 500);
});

for (const type of ["authorize", "token"] as const) {
  const D = `${S}: :${type}_url option`;
  const url = (c: Client) => type === "authorize" ? c.authorizeUrl() : c.tokenUrl();
  const key = type === "authorize" ? "authorizeUrl" : "tokenUrl";
  Deno.test(`${D} defaults to a path of /oauth/${type}`, () =>
    assert.equal(url(subject()), `https://api.example.com/oauth/${type}`));
  Deno.test(`${D} is settable via the :${type}_url option`, () => {
    const c = subject();
    c.options[key] = "/oauth/custom";
    assert.equal(url(c), "https://api.example.com/oauth/custom");
  });
  Deno.test(`${D} allows a different host than the site`, () => {
    const c = subject();
    c.options[key] = "https://api.foo.com/oauth/custom";
    assert.equal(url(c), "https://api.foo.com/oauth/custom");
  });
  Deno.test(`${D} when a URL with path is used in the site generates an authorization URL relative to the site`, () => {
    assert.equal(
      url(subject({ site: "https://example.com/blog" })),
      `https://example.com/blog/oauth/${type}`,
    );
  });
}

// :redirect_uri option
const RU = `${S}: :redirect_uri option`;
const authCodeParams = {
  client_id: "abc",
  client_secret: "def",
  code: "code",
  grant_type: "authorization_code",
};
Deno.test(`${RU} when blank there is no redirect_uri param added to authorization URL`, () => {
  assert.equal(subject().authorizeUrl({ a: "b" }), "https://api.example.com/oauth/authorize?a=b");
});
Deno.test(`${RU} when blank does not add the redirect_uri param to the auth_code token exchange request`, async () => {
  const { client } = stubbed(
    { authScheme: "request_body" },
    (s) => s.post("/oauth/token", authCodeParams, tokenJson),
  );
  assert.ok(await client.authCode.getToken("code") instanceof AccessToken);
});
Deno.test(`${RU} when set adds the redirect_uri param to authorization URL`, () => {
  const c = subject();
  c.options.redirectUri = "https://site.com/oauth/callback";
  assert.equal(
    c.authorizeUrl({ a: "b" }),
    "https://api.example.com/oauth/authorize?a=b&redirect_uri=https%3A%2F%2Fsite.com%2Foauth%2Fcallback",
  );
});
Deno.test(`${RU} when set adds the redirect_uri param to the auth_code token exchange request`, async () => {
  const { client } = stubbed(
    { authScheme: "request_body", redirectUri: "https://site.com/oauth/callback" },
    (s) =>
      s.post(
        "/oauth/token",
        { ...authCodeParams, redirect_uri: "https://site.com/oauth/callback" },
        tokenJson,
      ),
  );
  assert.ok(await client.authCode.getToken("code") instanceof AccessToken);
});
for (
  const [ctx, opts] of [
    ["with string key headers", { authScheme: "request_body" }],
    ["with symbol key headers (the same in JS)", { authScheme: "request_body" }],
    ["with string key custom headers and basic auth", {}],
    ["with symbol key custom headers and basic auth (the same in JS)", {}],
  ] as const
) {
  Deno.test(`${RU} custom headers ${ctx} adds the custom headers to request`, async () => {
    const { client, stubs } = stubbed(opts, (s) => s.post("/oauth/token", tokenJson));
    await client.authCode.getToken("code", { headers: { CustomHeader: "CustomHeader" } });
    assert.equal(stubs.requests[0].requestHeaders.get("customheader"), "CustomHeader");
  });
}

// #connection when debugging
const DBG = `${S}: #connection when debugging`;
const debugClient = (debug: boolean, extra: ClientOptions = {}) => {
  const logger = captureLogger();
  const { client } = instance({ debug, logger, ...extra });
  return { client, out: () => logger.lines.join("\n") };
};
for (const debug of [true, false]) {
  Deno.test(`${DBG} when OAUTH_DEBUG=${debug} smoothly handles successive requests`, async () => {
    const { client } = debugClient(debug);
    await client.request("get", "/success");
    await client.request("get", "/success");
  });
}
Deno.test(`${DBG} when OAUTH_DEBUG=true prints useful non-sensitive request and response details to STDOUT (the logger)`, async () => {
  const { client, out } = debugClient(true);
  await client.request("get", "/success");
  await client.request("get", "/reflect", { body: "this is harmless" });
  assert.match(out(), /request: GET https:\/\/api\.example\.com\/success/);
  assert.match(out(), /content-type.*text\/awesome/);
  assert.match(out(), /body: yay/);
  assert.ok(out().includes("this is harmless"));
});
Deno.test(`${DBG} when OAUTH_DEBUG=true redacts Authorization header values from STDOUT`, async () => {
  const { client, out } = debugClient(true);
  await client.request("get", "/success", {
    headers: { Authorization: "Bearer super-secret-token" },
  });
  assert.ok(out().includes("request: GET https://api.example.com/success"));
  assert.ok(!out().includes("super-secret-token"));
  assert.match(out(), /FILTERED|REDACTED/);
});
Deno.test(`${DBG} when OAUTH_DEBUG=true redacts form-encoded secret fields from STDOUT`, async () => {
  const { client, out } = debugClient(true);
  await client.request("post", "/reflect", {
    body: "access_token=abc123&client_secret=shhh&grant_type=refresh_token",
  });
  assert.ok(!out().includes("abc123"));
  assert.ok(!out().includes("shhh"));
  assert.ok(out().includes("grant_type"));
  assert.match(out(), /FILTERED|REDACTED/);
});
Deno.test(`${DBG} when OAUTH_DEBUG=true redacts token material in JSON responses from STDOUT`, async () => {
  const logger = captureLogger();
  const { client } = stubbed(
    { authScheme: "request_body", debug: true, logger },
    (s) =>
      s.post("/oauth/token", () => [
        200,
        JSONCT,
        JSON.stringify({
          access_token: "the-access-token",
          refresh_token: "the-refresh-token",
          id_token: "the-id-token",
          token_type: "Bearer",
        }),
      ]),
  );
  await client.getToken({});
  const out = logger.lines.join("\n");
  for (const s of ["the-access-token", "the-refresh-token", "the-id-token"]) {
    assert.ok(!out.includes(s));
  }
  assert.ok(out.includes("token_type"));
  assert.match(out, /FILTERED|REDACTED/);
});
Deno.test(`${DBG} when OAUTH_DEBUG=true redacts query-string secret fields from STDOUT`, async () => {
  const { client, out } = debugClient(true);
  await client.request("get", "/success", {
    params: { access_token: "abc123", state: "ok-state" },
  });
  assert.ok(!out().includes("abc123"));
  assert.ok(out().includes("ok-state"));
  assert.match(out(), /FILTERED|REDACTED/);
});
Deno.test(`${DBG} when OAUTH_DEBUG=true redacts basic auth credentials from STDOUT`, async () => {
  const logger = captureLogger();
  const { client } = stubbed({ debug: true, logger }, (s) => s.post("/oauth/token", tokenJson));
  await client.getToken({});
  const out = logger.lines.join("\n");
  assert.ok(!out.includes(btoa("abc:def")));
  assert.ok(!out.includes('def"'));
  assert.match(out, /FILTERED|REDACTED/);
});
Deno.test(`${DBG} when OAUTH_DEBUG=true redacts code_verifier and assertion fields from STDOUT`, async () => {
  const { client, out } = debugClient(true);
  await client.request("post", "/reflect", {
    body:
      "code_verifier=pkce-secret&assertion=jwt-assertion-material&grant_type=authorization_code",
  });
  assert.ok(!out().includes("pkce-secret"));
  assert.ok(!out().includes("jwt-assertion-material"));
  assert.ok(out().includes("grant_type"));
});
Deno.test(`${DBG} when OAUTH_DEBUG=true redacts revoke token values from STDOUT`, async () => {
  const { client, out } = debugClient(true);
  await client.revokeToken("banana-foster");
  assert.ok(!out().includes("banana-foster"));
  assert.ok(out().includes("/oauth/revoke"));
  assert.match(out(), /FILTERED|REDACTED/);
});
Deno.test(`${DBG} when OAUTH_DEBUG=true safely redacts obvious secrets in opaque non-JSON response bodies`, async () => {
  const logger = captureLogger();
  const { client } = stubbed(
    { debug: true, logger },
    (s) =>
      s.get(
        "/opaque_secret",
        () => [200, { "Content-Type": "text/plain" }, "access_token=abc123&note=hello"],
      ),
  );
  await client.request("get", "/opaque_secret");
  const out = logger.lines.join("\n");
  assert.ok(!out.includes("abc123"));
  assert.ok(out.includes("note=hello"));
  assert.match(out, /FILTERED|REDACTED/);
});
Deno.test(`${DBG} when OAUTH_DEBUG=true keeps using the initialized debug filter after config changes`, async () => {
  const { client, out } = debugClient(true);
  let saved: { label: string; keys: string[] } | undefined;
  configure((c) => {
    saved = { label: c.filteredLabel, keys: [...c.filteredDebugKeys] };
    c.filteredLabel = "[REDACTED]";
    c.filteredDebugKeys = [];
  });
  try {
    await client.request("get", "/success", {
      headers: { Authorization: "Bearer super-secret-token" },
    });
  } finally {
    configure((c) => {
      c.filteredLabel = saved!.label;
      c.filteredDebugKeys = saved!.keys;
    });
  }
  assert.ok(!out().includes("super-secret-token"));
  assert.ok(out().includes("[FILTERED]"));
  assert.ok(!out().includes("[REDACTED]"));
});
Deno.test(`${DBG} when OAUTH_DEBUG=false prints nothing to STDOUT`, async () => {
  const { client, out } = debugClient(false);
  await client.request("get", "/success");
  await client.request("get", "/reflect", { body: "this is magical" });
  assert.equal(out(), "");
});

Deno.test(`${S}: #authorize_url when space included encoded as %20`, () => {
  assert.ok(subject().authorizeUrl({ scope: "email profile" }).includes("email%20profile"));
});

// #request
const R = `${S}: #request`;
Deno.test(`${R} works with a null response body`, async () =>
  assert.equal((await subject().request("get", "empty_get")).body, ""));
Deno.test(`${R} returns on a successful response`, async () => {
  const r = await subject().request("get", "/success");
  assert.equal(r.body, "yay");
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "text/awesome");
});
Deno.test(`${R} when silence_extra_tokens_warning=false outputs to $stdout when OAUTH_DEBUG=true (the logger)`, async () => {
  const { client, out } = debugClient(true);
  await client.request("get", "/success");
  assert.ok(out().includes("request: GET https://api.example.com/success"));
  assert.ok(out().includes("response: 200 https://api.example.com/success"));
  assert.match(out(), /"content-type":"text\/awesome"/);
});
Deno.test(`${R} posts a body`, async () =>
  assert.equal((await subject().request("post", "/reflect", { body: "foo=bar" })).body, "foo=bar"));
Deno.test(`${R} follows redirects properly`, async () => {
  const r = await subject().request("get", "/redirect");
  assert.equal(r.body, "yay");
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "text/awesome");
});
Deno.test(`${R} treats protocol-relative redirect locations as same-origin paths (resolved to that host: credentials removed)`, async () => {
  const r = await subject().request("get", "/protocol_relative_redirect", {
    headers: { Authorization: "Bearer secret" },
  });
  const body = JSON.parse(r.body);
  assert.equal(body.auth, null);
  assert.equal(body.url, "https://attacker.example/leak");
});
Deno.test(`${R} preserves query and fragment components in protocol-relative redirect locations`, async () => {
  const { client } = stubbed({}, (s) => {
    s.get(
      "/protocol_relative_redirect_with_components",
      () => [302, { location: "//attacker.example/leak_with_components?x=1#frag" }, ""],
    );
    s.get("/leak_with_components", (env) => [200, {}, JSON.stringify({ url: env.url.href })]);
  });
  const r = await client.request("get", "/protocol_relative_redirect_with_components");
  assert.equal(JSON.parse(r.body).url, "https://attacker.example/leak_with_components?x=1");
});
Deno.test(`${R} preserves userinfo and port in protocol-relative redirect authorities`, async () => {
  const { client, stubs } = stubbed({}, (s) => {
    s.get(
      "/protocol_relative_redirect_with_authority",
      () => [302, { location: "//user:pass@attacker.example:8080/leak" }, ""],
    );
    s.get("/leak", (env) => [200, {}, JSON.stringify({ url: env.url.href })]);
  });
  await client.request("get", "/protocol_relative_redirect_with_authority");
  assert.equal(stubs.requests[1].url.port, "8080");
  assert.equal(stubs.requests[1].url.host, "attacker.example:8080");
});
for (
  const [ex, name] of [[
    "removes Authorization headers from cross-origin redirects",
    "Authorization",
  ], [
    "removes Authorization headers case-insensitively from cross-origin redirects",
    "authorization",
  ]]
) {
  Deno.test(`${R} ${ex}`, async () => {
    const r = await subject().request("get", "/absolute_cross_origin_redirect", {
      headers: { [name]: "Bearer secret", "X-Marker": "kept" },
    });
    const body = JSON.parse(r.body);
    assert.equal(body.auth, null);
    assert.equal(body.marker, "kept");
    assert.equal(body.url, "https://attacker.example/leak");
  });
}
Deno.test(`${R} follows cross-origin redirects when there are no credential headers to remove`, async () => {
  const body = JSON.parse((await subject().request("get", "/absolute_cross_origin_redirect")).body);
  assert.equal(body.auth, null);
  assert.equal(body.url, "https://attacker.example/leak");
});
Deno.test(`${R} keeps Authorization headers on same-origin absolute redirects`, async () => {
  const r = await subject().request("get", "/same_origin_absolute_redirect", {
    headers: { Authorization: "Bearer secret" },
  });
  const body = JSON.parse(r.body);
  assert.equal(body.auth, "Bearer secret");
  assert.equal(body.url, "https://api.example.com/leak");
});
Deno.test(`${R} accepts an absolute URL request target`, async () => {
  const r = await subject().request("get", "https://api.example.com/success");
  assert.equal(r.body, "yay");
  assert.equal(r.status, 200);
});
Deno.test(`${R} redirects using GET on a 303`, async () => {
  const r = await subject().request("post", "/redirect", { body: "foo=bar" });
  const body = JSON.parse(r.body);
  assert.equal(body.body, null);
  assert.equal(body.method, "get");
  assert.equal(body.url, "https://api.example.com/reflect_303");
  assert.equal(r.status, 200);
});
Deno.test(`${R} raises an error if a redirect has no Location header`, async () => {
  await assert.rejects(subject().request("get", "/redirect_no_loc"), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.match(e.message, /Got 302 status code, but no Location header was present/);
    return true;
  });
});
Deno.test(`${R} obeys the :max_redirects option`, async () => {
  const c = subject();
  c.options.maxRedirects = 0;
  assert.equal((await c.request("get", "/redirect")).status, 302);
});
Deno.test(`${R} tolerates nil redirect counts (no such option: a redirect is followed)`, async () => {
  assert.equal((await subject().request("get", "/redirect")).status, 200);
});
Deno.test(`${R} returns if raise_errors is false`, async () => {
  const c = subject();
  c.options.raiseErrors = false;
  const r = await c.request("get", "/unauthorized");
  assert.equal(r.status, 401);
  assert.equal(r.headers.get("content-type"), "application/json");
});
for (
  const path of [
    "/unauthorized",
    "/conflict",
    "/error",
    "/different_encoding",
    "/ascii_8bit_encoding",
  ]
) {
  Deno.test(`${R} raises OAuth2::Error on error response to path ${path}`, async () => {
    await assert.rejects(subject().request("get", path), OAuthError);
  });
}
Deno.test(`${R} re-encodes response body in the error message (UTF-8 kept as is)`, async () => {
  await assert.rejects(subject().request("get", "/ascii_8bit_encoding"), (e: unknown) => {
    assert.equal(
      (e as Error).message,
      'invalid_request: é\n{"error":"invalid_request","error_description":"é"}',
    );
    return true;
  });
});
Deno.test(`${R} parses OAuth2 standard error response`, async () => {
  await assert.rejects(subject().request("get", "/unauthorized"), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.equal(e.code, "invalid_token");
    assert.equal(e.description, "bad bad token");
    assert.match(String(e), /invalid_token/);
    assert.match(String(e), /bad bad token/);
    return true;
  });
});
Deno.test(`${R} provides the response in the Exception`, async () => {
  await assert.rejects(subject().request("get", "/error"), (e: unknown) => {
    assert.ok((e as OAuthError).response instanceof OAuthResponse);
    assert.ok(String(e).includes("unknown error"));
    return true;
  });
});
Deno.test(`${R} when errors are raised by Faraday with Faraday::ConnectionFailed rescues the exception (a ConnectionError)`, async () => {
  const c = new Client("abc", "def", {
    site: "https://api.example.com",
    connectionBuild: (b) => void b.adapter(() => Promise.reject(new TypeError("fail"))),
  });
  await assert.rejects(c.request("get", "/redirect"), (e: unknown) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.kind, "network");
    assert.match(e.message, /fail/);
    return true;
  });
});
Deno.test(`${R} when errors are raised by Faraday with Faraday::TimeoutError rescues the exception (a ConnectionError of kind timeout)`, async () => {
  const c = new Client("abc", "def", {
    site: "https://api.example.com",
    connectionOpts: { timeout: 1 },
    // an adapter that never answers, only gives up when the library aborts it
    connectionBuild: (b) =>
      void b.adapter((input) =>
        new Promise((_, reject) => {
          const signal = (input as Request).signal;
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        })
      ),
  });
  await assert.rejects(c.request("get", "/redirect"), (e: unknown) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.kind, "timeout");
    return true;
  });
});
Deno.test(`${R} when snaky: true body a body (the JSON text sent)`, async () => {
  const r = await subject().request("post", "/reflect", {
    headers: { "Content-Type": "application/json" },
    body: { foo: "bar" },
    snaky: true,
  });
  assert.equal(r.body, '{"foo":"bar"}');
});
Deno.test(`${R} when snaky: true body is a standard hash (body is the raw string; parsed is the hash)`, async () => {
  const r = await subject().request("post", "/reflect", {
    headers: { "Content-Type": "application/json" },
    body: { foo: "bar" },
    snaky: true,
  });
  assert.equal(typeof r.body, "string");
});

// #get_token
const G = `${S}: #get_token`;
Deno.test(`${G} returns a configured AccessToken`, async () => {
  const { client } = stubbed({}, (s) => s.post("/oauth/token", tokenJson));
  const t = await client.getToken({});
  assert.ok(t instanceof AccessToken);
  assert.equal(t.token, "the-token");
});
Deno.test(`${G} when parse: :xml but response is JSON returns a configured AccessToken`, async () => {
  // no XML parser here: an unregistered parser name reads the JSON body as JSON
  const { client } = stubbed({}, (s) => s.post("/oauth/token", tokenJson));
  const t = await client.getToken({ parse: "xml" });
  assert.ok(t instanceof AccessToken);
  assert.equal(t.token, "the-token");
});
Deno.test(`${G} works with a standard Hash if keys are correct (snakyHashClass: SnakyHash)`, async () => {
  const { client } = stubbed({}, (s) => s.post("/oauth/token", tokenJson));
  assert.equal((await client.getToken({ snakyHashClass: SnakyHash })).token, "the-token");
});
for (
  const [ctx, parse] of [["when parse: :automatic", "automatic"], [
    "when parse is fuzzed",
    "random",
  ], ["when parse is correct", "json"]] as const
) {
  Deno.test(`${G} ${ctx} returns a configured AccessToken`, async () => {
    const { client } = stubbed({}, (s) => s.post("/oauth/token", tokenJson));
    const t = await client.getToken({ parse });
    assert.ok(t instanceof AccessToken);
    assert.equal(t.token, "the-token");
  });
}

type SnakyCase = [
  ctx: string,
  snaky: boolean,
  body: Record<string, string>,
  tokenName: string | undefined,
  parsed: Record<string, string>,
];
const snakyCases: SnakyCase[] = [
  [
    "when falsy when response is underscored without token_name",
    false,
    { access_token: "the-token" },
    undefined,
    { access_token: "the-token" },
  ],
  [
    "when falsy when response is underscored with token_name",
    false,
    { access_token: "the-token" },
    "access_token",
    { access_token: "the-token" },
  ],
  [
    "when falsy when response is underscored with token_name with alternate token named",
    false,
    { banana_face: "the-token" },
    "banana_face",
    { banana_face: "the-token" },
  ],
  [
    "when falsy when response is camelcased without token_name",
    false,
    { accessToken: "the-token" },
    "accessToken",
    { accessToken: "the-token" },
  ],
  [
    "when falsy when response is camelcased with token_name",
    false,
    { accessToken: "the-token" },
    "accessToken",
    { accessToken: "the-token" },
  ],
  [
    "when falsy when response is camelcased with token_name with alternate token name",
    false,
    { bananaFace: "the-token" },
    "bananaFace",
    { bananaFace: "the-token" },
  ],
  [
    "when truthy when response is snake-cased with token_name",
    true,
    { access_token: "the-token" },
    "access_token",
    { access_token: "the-token" },
  ],
  [
    "when truthy when response is snake-cased with token_name with alternate token named",
    true,
    { banana_face: "the-token" },
    "banana_face",
    { banana_face: "the-token" },
  ],
  [
    "when truthy when response is snake-cased without token_name",
    true,
    { access_token: "the-token" },
    undefined,
    { access_token: "the-token" },
  ],
  [
    "when truthy when response is camel-cased with token_name",
    true,
    { accessToken: "the-token" },
    "accessToken",
    { access_token: "the-token" },
  ],
  [
    "when truthy when response is camel-cased with token_name with alternate snaky token named",
    true,
    { "banana-butterCake": "the-token" },
    "banana_butter_cake",
    { banana_butter_cake: "the-token" },
  ],
  [
    "when truthy when response is camel-cased without token_name",
    true,
    { accessToken: "the-token" },
    undefined,
    { access_token: "the-token" },
  ],
];
for (const [ctx, snaky, body, tokenName, parsed] of snakyCases) {
  const get = async () => {
    const { client } = stubbed(
      { raiseErrors: false },
      (s) => s.post("/oauth/token", () => [200, JSONCT, JSON.stringify(body)]),
    );
    return await client.getToken({ snaky }, tokenName ? { token_name: tokenName } : {});
  };
  const klass = snaky ? "a SnakyHash::StringKeyed" : "a Hash";
  const examples = snaky
    ? ctx.endsWith("camel-cased with token_name")
      ? [`parsed is ${klass}, and token is found`, "returns a snake-cased key"]
      : [
        `parsed is ${klass}`,
        ctx.includes("without token_name") && !ctx.includes("camel")
          ? "returns a configured AccessToken"
          : "returns a snake-cased key",
      ]
    : ctx.includes("alternate")
    ? [`parsed is ${klass}`, "returns a snake-cased key"]
    : ["returns a configured AccessToken", `parsed is ${klass}`];
  for (const ex of examples) {
    Deno.test(`${G} when snaky ${ctx} ${ex}`, async () => {
      const t = await get();
      assert.ok(t instanceof AccessToken);
      assert.equal(t.token, "the-token");
      const p = t.response!.parsed;
      if (snaky) {
        assert.ok(p instanceof SnakyHash);
        assert.deepEqual(p.toObject(), parsed);
      } else {
        assert.ok(!(p instanceof SnakyHash));
        assert.deepEqual(p, parsed);
      }
    });
  }
}
Deno.test(`${G} authenticates with request parameters`, async () => {
  const { client } = stubbed(
    { authScheme: "request_body" },
    (s) => s.post("/oauth/token", { client_id: "abc", client_secret: "def" }, tokenJson),
  );
  assert.ok(await client.getToken({}) instanceof AccessToken);
});
Deno.test(`${G} authenticates with Basic auth`, async () => {
  const { client } = stubbed({ authScheme: "basic_auth" }, (s) =>
    s.post("/oauth/token", (env) => {
      if (env.requestHeaders.get("authorization") !== `Basic ${btoa("abc:def")}`) {
        throw new Error("NotFound");
      }
      return tokenJson();
    }));
  assert.ok(await client.getToken({}) instanceof AccessToken);
});
Deno.test(`${G} authenticates with JSON`, async () => {
  const { client, stubs } = stubbed(
    { authScheme: "basic_auth" },
    (s) => s.post("/oauth/token", tokenJson),
  );
  assert.ok(
    await client.getToken({ headers: { "Content-Type": "application/json" } }) instanceof
      AccessToken,
  );
  assert.equal(stubs.requests[0].requestHeaders.get("content-type"), "application/json");
});
Deno.test(`${G} sets the response object on the access token`, async () => {
  const { client } = stubbed({}, (s) => s.post("/oauth/token", tokenJson));
  const t = await client.getToken({});
  assert.ok(t.response instanceof OAuthResponse);
  assert.deepEqual((t.response.parsed as SnakyHash).toObject(), { access_token: "the-token" });
});
const RE = `${G} when the :raise_errors flag is set to false`;
for (
  const [ctx, status, type, body] of [
    ["when the request body is nil does not raise error", 500, "application/json", null],
    ["when the request body is empty does not raise error", 500, "application/json", ""],
    ["when the request body is not valid JSON raises error", 500, "application/json", "BLOOP"],
    [
      "when status code is 200 when Content-Type is not JSON returns the parsed :access_token from body",
      200,
      "text/plain",
      "hello world",
    ],
  ] as const
) {
  Deno.test(`${RE} ${ctx} (getToken rejects with an OAuthError: documented)`, async () => {
    const { client } = stubbed(
      { raiseErrors: false },
      (s) => s.post("/oauth/token", () => [status, { "Content-Type": type }, body]),
    );
    await assert.rejects(client.getToken({}), OAuthError);
  });
}
Deno.test(`${RE} when status code is 200 when the request body is not nil returns the parsed :access_token from body`, async () => {
  const { client } = stubbed({ raiseErrors: false }, (s) => s.post("/oauth/token", tokenJson));
  const t = await client.getToken({});
  assert.deepEqual((t.response!.parsed as SnakyHash).toObject(), { access_token: "the-token" });
});
Deno.test(`${G} forwards given token parameters`, async () => {
  const { client } = stubbed(
    { authScheme: "request_body" },
    (s) =>
      s.post(
        "/oauth/token",
        { arbitrary: "parameter", client_id: "abc", client_secret: "def" },
        tokenJson,
      ),
  );
  await client.getToken({ arbitrary: "parameter" });
});
Deno.test(`${G} when token_method is set to post_with_query_string uses the http post method and passes parameters in the query string`, async () => {
  const { client, stubs } = stubbed(
    { tokenMethod: "post_with_query_string" },
    (s) => s.post("/oauth/token?state=abc123", tokenJson),
  );
  await client.getToken({ state: "abc123" });
  assert.equal(stubs.requests[0].method, "POST");
});

// #revoke_token
const RV = `${S}: #revoke_token`;
Deno.test(`${RV} with token string makes request with token param`, async () => {
  const { client, stubs } = instance();
  await client.revokeToken("banana-foster");
  assert.equal(stubs.requests[0].form.get("token"), "banana-foster");
});
Deno.test(`${RV} with token string has status 200`, async () =>
  assert.equal((await subject().revokeToken("banana-foster")).status, 200));
Deno.test(`${RV} with token_type_hint makes request with token_type_hint param`, async () => {
  const { client, stubs } = instance();
  await client.revokeToken("banana-foster", "access_token");
  assert.equal(stubs.requests[0].form.get("token_type_hint"), "access_token");
});
Deno.test(`${RV} with token_type_hint has status 200`, async () =>
  assert.equal((await subject().revokeToken("banana-foster", "access_token")).status, 200));
Deno.test(`${RV} with additional params merges additional params`, async () => {
  const { client, stubs } = instance();
  await client.revokeToken("banana-foster", undefined, { extra: "param" });
  assert.equal(stubs.requests[0].form.get("extra"), "param");
});
Deno.test(`${RV} with additional params submits params in request body`, async () => {
  const { client, stubs } = stubbed({}, (s) => s.post("/oauth/revoke", () => [200, JSONCT, ""]));
  await client.revokeToken("banana-foster", "access_token");
  assert.equal(stubs.requests[0].form.get("token"), "banana-foster");
  assert.equal(stubs.requests[0].url.search, "");
});
Deno.test(`${RV} with additional params has status 200`, async () =>
  assert.equal(
    (await subject().revokeToken("banana-foster", undefined, { extra: "param" })).status,
    200,
  ));

Deno.test(`${S}: instantiates an HTTP Method with this client (options.tokenMethod)`, () =>
  assert.equal(typeof subject().options.tokenMethod, "string"));
Deno.test(`${S}: instantiates an AuthCode strategy with this client`, () =>
  assert.equal(subject().authCode.constructor.name, "AuthCode"));
Deno.test(`${S}: instantiates an Implicit strategy with this client`, () =>
  assert.equal(subject().implicit.constructor.name, "Implicit"));
Deno.test(`${S}: #inspect filters out the @secret value`, () => {
  const out = Deno.inspect(subject());
  assert.match(out, /secret: "\[FILTERED\]"/);
  assert.ok(!out.includes('"def"'));
});
Deno.test(`${S}: when using Faraday::FlatParamsEncoder does not discard repeated params and encodes them as flat keys (arrays repeat the key)`, async () => {
  const { client, stubs } = stubbed(
    {},
    (s) => s.get("/v1/orders", () => [200, JSONCT, '{"ok":true}']),
  );
  await new AccessToken(client, "token123").get("/v1/orders", {
    params: {
      filter: ["order.clientCreatedTime>1445006997000", "order.clientCreatedTime<1445611797000"],
    },
  });
  const qs = stubs.requests[0].url.search;
  assert.ok(qs.includes("filter=order.clientCreatedTime%3E1445006997000"));
  assert.ok(qs.includes("filter=order.clientCreatedTime%3C1445611797000"));
});

// "when errors are raised by Faraday": the transport itself fails.
for (
  const [ctx, thrown, kind] of [
    ["with Faraday::ConnectionFailed", new TypeError("fail"), "network"],
    ["with Faraday::TimeoutError", new DOMException("timeout", "TimeoutError"), "network"],
  ] as const
) {
  Deno.test(`${R} when errors are raised by Faraday ${ctx} rescues the exception`, async () => {
    const client = new Client("abc", "def", {
      site: "https://api.example.com",
      connectionBuild: (b) => void b.adapter(() => Promise.reject(thrown)),
    });
    await assert.rejects(client.request("get", "/redirect"), (e: unknown) => {
      assert.ok(e instanceof ConnectionError);
      assert.equal(e.kind, kind);
      assert.match(
        e.message,
        new RegExp(`GET https://api\\.example\\.com/redirect failed: .*${thrown.message}`),
      );
      return true;
    });
  });
}

/**
 * Port of the smaller ruby-oauth/oauth2 specs: authenticator_spec.rb,
 * oauth2_spec.rb, version_spec.rb, strategy-independent examples
 * (examples/google_spec.rb), snaky_hash_spec.rb (its last version in the gem,
 * before SnakyHash moved to its own gem) and the FilteredAttributes part of
 * auth/sanitizer/thing_filter_spec.rb; one Deno test per example.
 *
 * Documented differences: the Authenticator is not public: its examples are
 * asserted on the wire of a real token request (through the transport
 * seam); Basic credentials are form-encoded first (RFC 6749 §2.3.1: equal to
 * the gem's for these ids); `private_key_jwt` signs its own client assertion
 * (the gem sends nothing and leaves it to the caller); an unknown scheme is
 * a TypeError at construction; the Authenticator's `filtered_attributes`
 * class API does not exist (inspection of a Client always hides the secret).
 * SnakyHash: `get`/`set`/`has` take either spelling (Ruby's `[]`, `fetch`,
 * `key?`); `get` of a missing key is undefined (no KeyError).
 * Not ported: ThingFilter internals (frozen strings, in-place mutation: JS
 * strings are immutable), AUTH_SANITIZER constant isolation and load-path
 * examples (Ruby loading).
 */
import assert from "node:assert/strict";
import * as jose from "jose";
import { Client, type ClientOptions, config, configure, SnakyHash, VERSION } from "../../../mod.ts";
import { stubbedClient } from "./_faraday.ts";

// ---------------------------------------------------------------- authenticator_spec.rb
const A = "authenticator_spec.rb";
async function wire(
  id: string,
  secret: string,
  authScheme: ClientOptions["authScheme"],
  params: Record<string, unknown> = {},
) {
  const { client, stubs } = stubbedClient(
    id,
    secret,
    { site: "https://api.example.com", authScheme },
    (s) =>
      s.post(
        "/oauth/token",
        () => [200, { "Content-Type": "application/json" }, '{"access_token":"t"}'],
      ),
  );
  await client.getToken({ grant_type: "client_credentials", ...params });
  const req = stubs.requests[0];
  const form = Object.fromEntries(req.form);
  delete form.grant_type;
  return { form, headers: req.requestHeaders };
}
Deno.test(`${A}: raises NotImplementedError for unknown authentication mode (a TypeError at construction)`, () => {
  assert.throws(() => new Client("foo", "bar", { authScheme: "undefined" as never }), TypeError);
});
const P = `${A}: #apply with parameter-based authentication`;
Deno.test(`${P} adds client_id and client_secret to params`, async () => {
  assert.deepEqual((await wire("foo", "bar", "request_body")).form, {
    client_id: "foo",
    client_secret: "bar",
  });
});
Deno.test(`${P} when client_id nil ignores client_id, but adds client_secret to params (an empty id is sent: id is a required string)`, async () => {
  assert.deepEqual((await wire("", "bar", "request_body")).form, {
    client_id: "",
    client_secret: "bar",
  });
});
Deno.test(`${P} does not overwrite existing credentials`, async () => {
  assert.deepEqual((await wire("foo", "bar", "request_body", { client_secret: "s3cr3t" })).form, {
    client_id: "foo",
    client_secret: "s3cr3t",
  });
});
Deno.test(`${P} preserves other parameters`, async () => {
  const { form, headers } = await wire("foo", "bar", "request_body", {
    state: "42",
    headers: { A: "b" },
  });
  assert.deepEqual(form, { client_id: "foo", client_secret: "bar", state: "42" });
  assert.equal(headers.get("a"), "b");
});
Deno.test(`${P} with nil secret does not set nil client_secret (an empty secret is sent as given)`, async () => {
  assert.deepEqual((await wire("foo", "", "request_body")).form, {
    client_id: "foo",
    client_secret: "",
  });
});
Deno.test(`${P} with tls client authentication does not add client_secret`, async () => {
  assert.deepEqual((await wire("foo", "bar", "tls_client_auth")).form, { client_id: "foo" });
});
Deno.test(`${P} with private key jwt authentication does not include client_id or client_secret (we add client_id and our signed assertion)`, async () => {
  const { privateKey } = await crypto.subtle.generateKey(
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["sign", "verify"],
  );
  const { client, stubs } = stubbedClient(
    "foo",
    "bar",
    {
      site: "https://api.example.com",
      authScheme: "private_key_jwt",
      clientAssertionKey: privateKey,
      clientAssertionAlg: "ES256",
    },
    (s) =>
      s.post(
        "/oauth/token",
        () => [200, { "Content-Type": "application/json" }, '{"access_token":"t"}'],
      ),
  );
  await client.getToken({ grant_type: "client_credentials" });
  const form = stubs.requests[0].form;
  assert.equal(form.get("client_secret"), null);
  assert.equal(
    form.get("client_assertion_type"),
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
  );
});
Deno.test(`${A}: #apply with tls_client_auth when client_id present adds client_id to params`, async () => {
  assert.deepEqual((await wire("foobar", "bar", "tls_client_auth")).form, { client_id: "foobar" });
});
Deno.test(`${A}: #apply with tls_client_auth when client_id nil ignores client_id for params (an empty id is sent)`, async () => {
  assert.deepEqual((await wire("", "bar", "tls_client_auth")).form, { client_id: "" });
});
const B = `${A}: #apply with Basic authentication`;
Deno.test(`${B} encodes credentials in headers`, async () => {
  const { form, headers } = await wire("foo", "bar", "basic_auth");
  assert.deepEqual(form, {});
  assert.equal(headers.get("authorization"), `Basic ${btoa("foo:bar")}`);
});
Deno.test(`${B} does not overwrite existing credentials`, async () => {
  const { headers } = await wire("foo", "bar", "basic_auth", {
    headers: { Authorization: "Bearer abc123" },
  });
  assert.equal(headers.get("authorization"), "Bearer abc123");
});
Deno.test(`${B} does not overwrite existing params or headers`, async () => {
  const { form, headers } = await wire("foo", "bar", "basic_auth", {
    state: "42",
    headers: { A: "b" },
  });
  assert.deepEqual(form, { state: "42" });
  assert.equal(headers.get("a"), "b");
  assert.equal(headers.get("authorization"), `Basic ${btoa("foo:bar")}`);
});
Deno.test(`${A}: #inspect filters secret by default (a Client's inspection)`, () => {
  assert.ok(!Deno.inspect(new Client("foo", "bar")).includes('"bar"'));
});
Deno.test(`${A}: #inspect filters out the @secret value`, () => {
  assert.match(Deno.inspect(new Client("foo", "bar")), /secret: "\[FILTERED\]"/);
});
Deno.test(`${A}: #inspect when config changes after initialization keeps using the initialized filter label`, () => {
  const client = new Client("foo", "bar");
  const label = config.filteredLabel;
  configure((c) => void (c.filteredLabel = "[REDACTED]"));
  try {
    const out = Deno.inspect(client);
    assert.ok(out.includes("[FILTERED]"));
    assert.ok(!out.includes("[REDACTED]"));
  } finally {
    configure((c) => void (c.filteredLabel = label));
  }
});

// ---------------------------------------------------------------- oauth2_spec.rb
Deno.test("oauth2_spec.rb: silence_extra_tokens_warning is a boolean", () => {
  assert.equal(typeof config.silenceExtraTokensWarning, "boolean");
});
for (const key of ["silenceExtraTokensWarning", "silenceNoTokensWarning"] as const) {
  const ruby = key === "silenceExtraTokensWarning"
    ? "silence_extra_tokens_warning"
    : "silence_no_tokens_warning";
  Deno.test(`oauth2_spec.rb: .configure can change setting of ${ruby}`, () => {
    const before = config[key];
    configure((c) => void (c[key] = false));
    try {
      assert.equal(config[key], false);
      configure((c) => void (c[key] = true));
      assert.equal(config[key], true);
    } finally {
      configure((c) => void (c[key] = before));
    }
  });
}

// ---------------------------------------------------------------- version_spec.rb
Deno.test("version_spec.rb: is greater than 1.0.0 (a semver string; this library is 0.x)", () => {
  assert.match(VERSION, /^\d+\.\d+\.\d+$/);
});

// ---------------------------------------------------------------- examples/google_spec.rb
for (
  const [ctx, ex, sub] of [
    ["when passing the required claims", "sends a JWT with the 5 keys", false],
    ["when including the optional `sub` claim", "sends a JWT with the 6 keys", true],
  ] as const
) {
  Deno.test(`google_spec.rb: using OAuth2 with Google via 2-legged JWT assertion ${ctx} ${ex}`, async () => {
    const { client, stubs } = stubbedClient(
      "",
      "",
      {
        site: "https://accounts.google.com",
        authorizeUrl: "/o/oauth2/auth",
        tokenUrl: "/o/oauth2/token",
        authScheme: "request_body",
      },
      (s) =>
        s.post(
          "/o/oauth2/token",
          () => [
            200,
            { "Content-Type": "application/json" },
            JSON.stringify({
              access_token: "1/8xbJqaOZXSUZbHLl5EOtu1pxz3fmmetKx9W8CV4t79M",
              token_type: "Bearer",
              expires_in: 3600,
            }),
          ],
        ),
    );
    const now = Math.floor(Date.now() / 1000);
    const claims: Record<string, unknown> = {
      iss: "761326798069-r5mljlln1rd4lrbhg75efgigp36m78j5@developer.gserviceaccount.com",
      scope:
        "https://www.googleapis.com/auth/devstorage.readonly https://www.googleapis.com/auth/prediction",
      aud: "https://www.googleapis.com/oauth2/v4/token",
      exp: now + 3600,
      iat: now,
      ...(sub ? { sub: "some.user@example.com" } : {}),
    };
    // the p12 fixture needs a PKCS#12 reader; the gem's spec falls back to a fresh RSA key, as here
    const key = await crypto.subtle.generateKey(
      {
        name: "RSASSA-PKCS1-v1_5",
        modulusLength: 2048,
        publicExponent: new Uint8Array([1, 0, 1]),
        hash: "SHA-256",
      },
      true,
      ["sign", "verify"],
    );
    await client.assertion.getToken(claims, { key: key.privateKey, algorithm: "RS256" });
    const form = stubs.requests[0].form;
    assert.equal(form.get("grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
    const { payload, protectedHeader } = await jose.jwtVerify(
      form.get("assertion")!,
      key.publicKey,
    );
    assert.equal(protectedHeader.alg, "RS256");
    assert.deepEqual(Object.keys(payload).sort(), Object.keys(claims).sort());
    assert.deepEqual({ ...payload }, claims);
  });
}

// ---------------------------------------------------------------- snaky_hash_spec.rb
const H = "snaky_hash_spec.rb";
Deno.test(`${H}: .build when build from hash create correct snake hash`, () => {
  const h = new SnakyHash({ AccessToken: "1" });
  assert.ok(h instanceof SnakyHash);
  assert.equal(h.get("AccessToken"), "1");
  assert.equal(h.get("access_token"), "1");
});
Deno.test(`${H}: .build when build from snake_hash create correct snake hash`, () => {
  const inner = new SnakyHash();
  inner.set("AccessToken", "1");
  const h = new SnakyHash(inner.toObject());
  assert.equal(h.get("AccessToken"), "1");
  assert.equal(h.get("access_token"), "1");
});
Deno.test(`${H}: assign and query returns assigned value with camel key`, () => {
  const h = new SnakyHash().set("AccessToken", "1");
  assert.equal(h.get("AccessToken"), "1");
  assert.equal(h.get("access_token"), "1");
});
Deno.test(`${H}: assign and query returns assigned value with snake key`, () => {
  const h = new SnakyHash().set("access_token", "1");
  assert.equal(h.get("AccessToken"), "1");
  assert.equal(h.access_token, "1");
});
Deno.test(`${H}: assign and query overwrite by alternate key`, () => {
  const h = new SnakyHash().set("AccessToken", "1");
  assert.equal(h.get("access_token"), "1");
  h.set("access_token", "2");
  assert.equal(h.get("AccessToken"), "2");
  assert.equal(h.get("access_token"), "2");
});
Deno.test(`${H}: #to_h when nil can be converted to empty hash`, () =>
  assert.deepEqual(new SnakyHash().toObject(), {}));
Deno.test(`${H}: #to_h when empty can be converted to empty hash`, () =>
  assert.deepEqual(new SnakyHash({}).toObject(), {}));
Deno.test(`${H}: #to_h when not empty converts to snake hash`, () => {
  const h = new SnakyHash({ a: "b", bTo: "aDo", v_rt: 1, yy_yy: "yy_yy", LuLu: "CRays" });
  assert.deepEqual(h.toObject(), { a: "b", b_to: "aDo", lu_lu: "CRays", v_rt: 1, yy_yy: "yy_yy" });
});
for (
  const [ctx, key] of [["when Camel case key", "AccessToken"], [
    "when Camel case key with down-cased first letter",
    "accessToken",
  ], ["when snake case key", "access_token"]]
) {
  Deno.test(`${H}: #fetch ${ctx} return correct token`, () =>
    assert.equal(new SnakyHash({ [key]: "1" }).get("access_token"), "1"));
  Deno.test(`${H}: #key? ${ctx} return true`, () =>
    assert.equal(new SnakyHash({ [key]: "1" }).has("access_token"), true));
}
Deno.test(`${H}: #fetch when missing any key raise KeyError with key (get gives undefined: documented)`, () => {
  assert.equal(new SnakyHash().get("access_token"), undefined);
});
Deno.test(`${H}: #fetch when missing any key return default value`, () => {
  assert.equal(new SnakyHash().get("access_token") ?? "default", "default");
});
Deno.test(`${H}: #key? when missing any key return false`, () =>
  assert.equal(new SnakyHash().has("access_token"), false));

// ---------------------------------------------------------------- auth/sanitizer/thing_filter_spec.rb
const T = "thing_filter_spec.rb: FilteredAttributes integration";
Deno.test(`${T} filters configured attributes in inspect (a Client: secret filtered, id shown)`, () => {
  const out = Deno.inspect(new Client("bolt", "super-secret"));
  assert.ok(out.includes("[FILTERED]"));
  assert.ok(out.includes('"bolt"'));
  assert.ok(!out.includes("super-secret"));
});
Deno.test(`${T} can be duplicated (structuredClone of its JSON view keeps the secret out)`, () => {
  const copy = structuredClone(new Client("bolt", "super-secret").toJSON());
  assert.equal(copy.secret, "[FILTERED]");
  assert.equal(copy.id, "bolt");
});
Deno.test(`${T} can be cloned (JSON round trip keeps the secret out)`, () => {
  const copy = JSON.parse(JSON.stringify(new Client("bolt", "super-secret")));
  assert.equal(copy.secret, "[FILTERED]");
  assert.equal(copy.id, "bolt");
});

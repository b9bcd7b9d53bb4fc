/**
 * Port of ruby-oauth/oauth2 spec/oauth2/strategy/*_spec.rb (auth_code,
 * implicit, password, client_credentials, assertion, base): one Deno test per
 * example, named "<spec file>: <describe> <example>".
 *
 * Documented equivalents: ArgumentError and NotImplementedError are a
 * TypeError and an Error; `get_token` returns a Promise; `access["x"]` reads
 * `token.params.x`; options are camelCase (`tokenMethod`, `authScheme`).
 */
import assert from "node:assert/strict";
import * as jose from "jose";
import { AccessToken, Client, type ClientOptions, OAuthError } from "../../../mod.ts";
import { type Reply, stubbedClient } from "./_faraday.ts";

const KV = "expires_in=600&access_token=salmon&refresh_token=trout&extra_param=steve";
const JSON_TOKEN = JSON.stringify({
  expires_in: 600,
  access_token: "salmon",
  refresh_token: "trout",
  extra_param: "steve",
});
const FORM = { "Content-Type": "application/x-www-form-urlencoded" };
const JSONCT = { "Content-Type": "application/json" };

// ---------------------------------------------------------------- auth_code_spec.rb
const AC = "auth_code_spec.rb";
const REDIRECT = "http://example.com/redirect_uri";

function authCodeClient(mode: string, opts: ClientOptions = {}, jsonToken = JSON_TOKEN) {
  const reply = (): Reply => {
    switch (mode) {
      case "formencoded":
        return [200, FORM, KV];
      case "json":
        return [200, JSONCT, jsonToken];
      case "from_facebook":
        return [200, FORM, KV.replaceAll("_in", "")];
      case "from_microsoft":
        return [200, FORM, "id_token=i_am_MSFT"];
    }
    throw new Error(`Bad mode: ${mode}`);
  };
  return stubbedClient("abc", "def", { site: "http://api.example.com", ...opts }, (stub) => {
    stub.get("/oauth/token?client_id=abc&code=sushi&grant_type=authorization_code", reply);
    stub.post("/oauth/token", {
      client_id: "abc",
      client_secret: "def",
      code: "sushi",
      grant_type: "authorization_code",
    }, reply);
    stub.post("/oauth/token", {
      client_id: "abc",
      client_secret: "def",
      code: "sushi",
      grant_type: "authorization_code",
      redirect_uri: REDIRECT,
    }, () => [200, JSONCT, jsonToken]);
  }).client;
}

for (const [name, kind] of [[AC, "authCode"], ["implicit_spec.rb", "implicit"]] as const) {
  const subject = () => new Client("abc", "def", { site: "http://api.example.com" })[kind];
  const type = kind === "authCode" ? "code" : "token";
  Deno.test(`${name}: #authorize_url includes the client_id`, () => {
    assert.ok(subject().authorizeUrl().includes("client_id=abc"));
  });
  Deno.test(`${name}: #authorize_url includes the type`, () => {
    assert.ok(subject().authorizeUrl().includes(`response_type=${type}`));
  });
  Deno.test(`${name}: #authorize_url does not include the client_secret`, () => {
    assert.ok(!subject().authorizeUrl().includes("client_secret=def"));
  });
  Deno.test(`${name}: #authorize_url raises an error if the client_secret is passed in (TypeError for ArgumentError)`, () => {
    assert.throws(() => subject().authorizeUrl({ client_secret: "def" }), TypeError);
  });
  Deno.test(`${name}: #authorize_url raises an error if the client_secret is passed in with string keys (TypeError; JS keys are always strings)`, () => {
    assert.throws(() => subject().authorizeUrl({ ["client_secret"]: "def" }), /client_secret/);
  });
  Deno.test(`${name}: #authorize_url includes passed in options`, () => {
    const cb = "http://myserver.local/oauth/callback";
    assert.ok(
      subject().authorizeUrl({ redirect_uri: cb }).includes(
        `redirect_uri=${encodeURIComponent(cb)}`,
      ),
    );
  });
}

Deno.test(`implicit_spec.rb: #get_token raises NotImplementedError (an Error)`, () => {
  assert.throws(() => new Client("abc", "def").implicit.getToken(), Error);
});

Deno.test(`${AC}: #get_token (with dynamic redirect_uri) does not raise error`, async () => {
  const c = authCodeClient("json", { authScheme: "request_body", redirectUri: REDIRECT });
  await c.authCode.getToken("sushi", { redirect_uri: REDIRECT });
});
Deno.test(`${AC}: #get_token (with dynamic redirect_uri) gets a token`, async () => {
  const c = authCodeClient("json", { authScheme: "request_body", redirectUri: REDIRECT });
  assert.equal((await c.authCode.getToken("sushi", { redirect_uri: REDIRECT })).token, "salmon");
});

const utf8Token = JSON.stringify({
  expires_in: 600,
  access_token: "salmon",
  refresh_token: "trout",
  extra_param: "André",
});
Deno.test(`${AC}: #get_token (handling utf-8 data) does not raise an error`, async () => {
  await authCodeClient("json", { authScheme: "request_body" }, utf8Token).authCode.getToken(
    "sushi",
  );
});
Deno.test(`${AC}: #get_token (handling utf-8 data) does not create an error instance`, async () => {
  const c = authCodeClient("json", { authScheme: "request_body" }, utf8Token);
  const token = await c.authCode.getToken("sushi");
  assert.equal(token.response?.error, undefined);
  assert.equal(token.params.extra_param, "André");
});
Deno.test(`${AC}: #get_token (handling utf-8 data) can get a token`, async () => {
  const c = authCodeClient("json", { authScheme: "request_body" }, utf8Token);
  assert.equal((await c.authCode.getToken("sushi")).token, "salmon");
});
Deno.test(`${AC}: #get_token (from microsoft) doesn't treat an OpenID Connect token with only an id_token (like from Microsoft) as invalid`, async () => {
  const c = authCodeClient("from_microsoft", { tokenMethod: "get", authScheme: "request_body" });
  assert.equal((await c.authCode.getToken("sushi")).token, "i_am_MSFT");
});

for (const mode of ["json", "formencoded", "from_facebook"]) {
  for (const verb of ["get", "post"] as const) {
    const d = `#get_token (${mode}, access_token_method=${verb}`;
    const access = async () => {
      const client = authCodeClient(mode, { tokenMethod: verb, authScheme: "request_body" });
      return { client, access: await client.authCode.getToken("sushi") };
    };
    Deno.test(`${AC}: ${d} returns AccessToken with same Client`, async () => {
      const { client, access: a } = await access();
      assert.equal(a.client, client);
    });
    Deno.test(`${AC}: ${d} returns AccessToken with #token`, async () => {
      assert.equal((await access()).access.token, "salmon");
    });
    Deno.test(`${AC}: ${d} returns AccessToken with #refresh_token`, async () => {
      assert.equal((await access()).access.refreshToken, "trout");
    });
    Deno.test(`${AC}: ${d} returns AccessToken with #expires_in`, async () => {
      assert.equal((await access()).access.expiresIn, 600);
    });
    Deno.test(`${AC}: ${d} returns AccessToken with #expires_at`, async () => {
      assert.ok(Number.isInteger((await access()).access.expiresAt));
    });
    Deno.test(`${AC}: ${d} returns AccessToken with params accessible via [] (token.params)`, async () => {
      assert.equal((await access()).access.params.extra_param, "steve");
    });
  }
}

// ---------------------------------------------------------------- password_spec.rb
const PW = "password_spec.rb";
function passwordClient(mode: string) {
  return stubbedClient("abc", "def", { site: "http://api.example.com" }, (stub) => {
    stub.post(
      "/oauth/token",
      () =>
        mode === "formencoded"
          ? [200, FORM, "expires_in=600&access_token=salmon&refresh_token=trout"]
          : [200, JSONCT, '{"expires_in":600,"access_token":"salmon","refresh_token":"trout"}'],
    );
  });
}
Deno.test(`${PW}: #authorize_url raises NotImplementedError (an Error)`, () => {
  assert.throws(() => new Client("abc", "def").password.authorizeUrl(), Error);
});
for (const mode of ["json", "formencoded"]) {
  const get = async () => {
    const { client, stubs } = passwordClient(mode);
    const access = await client.password.getToken("username", "password");
    assert.equal(stubs.requests[0].form.get("grant_type"), "password");
    assert.equal(stubs.requests[0].form.get("username"), "username");
    return { client, access };
  };
  const d = `#get_token (${mode})`;
  Deno.test(`${PW}: ${d} returns AccessToken with same Client`, async () => {
    const { client, access } = await get();
    assert.equal(access.client, client);
  });
  Deno.test(`${PW}: ${d} returns AccessToken with #token`, async () => {
    assert.equal((await get()).access.token, "salmon");
  });
  Deno.test(`${PW}: ${d} returns AccessToken with #refresh_token`, async () => {
    assert.equal((await get()).access.refreshToken, "trout");
  });
  Deno.test(`${PW}: ${d} returns AccessToken with #expires_in`, async () => {
    assert.equal((await get()).access.expiresIn, 600);
  });
  Deno.test(`${PW}: ${d} returns AccessToken with #expires_at`, async () => {
    assert.notEqual((await get()).access.expiresAt, undefined);
  });
}

// ---------------------------------------------------------------- client_credentials_spec.rb
const CC = "client_credentials_spec.rb";
function ccClient(mode: string, authScheme: "basic_auth" | "request_body" = "basic_auth") {
  const reply = (): Reply =>
    mode === "formencoded"
      ? [200, FORM, "expires_in=600&access_token=salmon&refresh_token=trout"]
      : [200, JSONCT, '{"expires_in":600,"access_token":"salmon","refresh_token":"trout"}'];
  return stubbedClient("abc", "def", { site: "http://api.example.com", authScheme }, (stub) => {
    stub.post("/oauth/token", { grant_type: "client_credentials" }, (env) => {
      const [id, secret] = atob(env.requestHeaders.get("authorization")!.split(" ")[1]).split(":");
      if (id !== "abc" || secret !== "def") throw new Error("NotFound");
      return reply();
    });
    stub.post("/oauth/token", {
      client_id: "abc",
      client_secret: "def",
      grant_type: "client_credentials",
    }, reply);
  });
}
Deno.test(`${CC}: #authorize_url raises NotImplementedError (an Error)`, () => {
  assert.throws(() => new Client("abc", "def").clientCredentials.authorizeUrl(), Error);
});
for (const mode of ["json", "formencoded"]) {
  for (const scheme of ["basic_auth", "request_body"] as const) {
    const d = `#get_token (${mode}) (${scheme})`;
    const get = async () => {
      const { client } = ccClient(mode, scheme);
      return { client, access: await client.clientCredentials.getToken() };
    };
    Deno.test(`${CC}: ${d} returns AccessToken with same Client`, async () => {
      const { client, access } = await get();
      assert.equal(access.client, client);
    });
    Deno.test(`${CC}: ${d} returns AccessToken with #token`, async () => {
      assert.equal((await get()).access.token, "salmon");
    });
    Deno.test(`${CC}: ${d} returns AccessToken without #refresh_token`, async () => {
      assert.equal((await get()).access.refreshToken, "trout");
    });
    Deno.test(`${CC}: ${d} returns AccessToken with #expires_in`, async () => {
      assert.equal((await get()).access.expiresIn, 600);
    });
    Deno.test(`${CC}: ${d} returns AccessToken with #expires_at`, async () => {
      assert.notEqual((await get()).access.expiresAt, undefined);
    });
  }
}
Deno.test(`${CC}: #get_token (with extra header parameters) sends the header correctly.`, async () => {
  const { client, stubs } = ccClient("json");
  await client.clientCredentials.getToken({ headers: { "X-Extra-Header": "wow" } });
  assert.equal(stubs.requests[0].requestHeaders.get("x-extra-header"), "wow");
});
Deno.test(`${CC}: #get_token (with option overriding response) override is applied`, async () => {
  const { client } = ccClient("json");
  const access = await client.clientCredentials.getToken({}, { refresh_token: "guppy" });
  assert.equal(access.token, "salmon");
  assert.equal(access.refreshToken, "guppy");
});

// ---------------------------------------------------------------- base_spec.rb
Deno.test("base_spec.rb: initializes with a Client (strategies are built from a client)", () => {
  const client = new Client("abc", "def");
  for (const s of [client.authCode, client.implicit, client.password, client.clientCredentials]) {
    assert.ok(s);
  }
});

// ---------------------------------------------------------------- assertion_spec.rb
const AS = "assertion_spec.rb";
const RSA_PEM = Deno.readTextFileSync(new URL("./fixtures/jwtRS256.key", import.meta.url));
function assertionClient(authScheme: "request_body" | "basic_auth", format = "json") {
  return stubbedClient("abc", "def", { site: "http://api.example.com", authScheme }, (stub) => {
    stub.post(
      "/oauth/token",
      () =>
        format === "formencoded"
          ? [200, FORM, "expires_in=600&access_token=salmon&refresh_token=trout"]
          : [200, JSONCT, '{"expires_in":600,"access_token":"salmon","refresh_token":"trout"}'],
    );
  });
}
function claims() {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    iss: "carp@example.com",
    scope: "https://oauth.example.com/auth/flounder",
    aud: "https://sturgeon.example.com/oauth2/token",
    exp: timestamp + 3600,
    iat: timestamp,
    sub: "12345",
    custom_claim: "ling cod",
  };
}
Deno.test(`${AS}: #authorize_url raises NotImplementedError (an Error)`, () => {
  assert.throws(() => new Client("abc", "def").assertion.authorizeUrl(), Error);
});

async function rsaPublic(): Promise<CryptoKey> {
  const priv = await jose.importPKCS8(await pkcs1ToPkcs8Pem(RSA_PEM), "RS256", {
    extractable: true,
  });
  const jwk = await jose.exportJWK(priv);
  return await jose.importJWK({ kty: "RSA", n: jwk.n, e: jwk.e }, "RS256") as CryptoKey;
}
/** jose reads PKCS#8 only: wrap the PKCS#1 fixture (the library reads it itself). */
function pkcs1ToPkcs8Pem(pem: string): string {
  const der = Uint8Array.from(
    atob(pem.replace(/-----[^-]+-----/g, "").replace(/\s/g, "")),
    (c) => c.charCodeAt(0),
  );
  const len = (n: number) => n < 128 ? [n] : n < 256 ? [0x81, n] : [0x82, n >> 8, n & 255];
  const octet = [0x04, ...len(der.length), ...der];
  const algId = [
    0x30,
    0x0d,
    0x06,
    0x09,
    0x2a,
    0x86,
    0x48,
    0x86,
    0xf7,
    0x0d,
    0x01,
    0x01,
    0x01,
    0x05,
    0x00,
  ];
  const body = [0x02, 0x01, 0x00, ...algId, ...octet];
  const seq = new Uint8Array([0x30, ...len(body.length), ...body]);
  const b64 = btoa(String.fromCharCode(...seq)).replace(/.{64}/g, "$&\n");
  return `-----BEGIN PRIVATE KEY-----\n${b64}\n-----END PRIVATE KEY-----`;
}

type KeyCase = {
  ctx: string;
  algorithm: string;
  key: () => Promise<unknown>;
  verify: () => Promise<unknown>;
  kid?: string;
};
const keyCases: KeyCase[] = [
  {
    ctx: "when encoding as HS256",
    algorithm: "HS256",
    key: () => Promise.resolve("super_secret!"),
    verify: () => Promise.resolve(new TextEncoder().encode("super_secret!")),
  },
  {
    ctx: "when encoding as HS256 with real key",
    algorithm: "HS256",
    key: () => Promise.resolve("1883be842495c3b58f68ca71fbf1397fbb9ed2fdf8990f8404a25d0a1b995943"),
    verify: () =>
      Promise.resolve(
        new TextEncoder().encode(
          "1883be842495c3b58f68ca71fbf1397fbb9ed2fdf8990f8404a25d0a1b995943",
        ),
      ),
  },
  {
    ctx: "when encoding as RS256 (a fresh 2048-bit key)",
    algorithm: "RS256",
    key: async () => (await crypto.subtle.generateKey(
      {
        name: "RSASSA-PKCS1-v1_5",
        modulusLength: 2048,
        publicExponent: new Uint8Array([1, 0, 1]),
        hash: "SHA-256",
      },
      true,
      ["sign", "verify"],
    )),
    verify: () => Promise.resolve(undefined),
  },
  {
    ctx: "when encoding as RS256 with private key",
    algorithm: "RS256",
    key: () => Promise.resolve(RSA_PEM),
    verify: rsaPublic,
  },
  {
    ctx: "with bad encoding params when including a Key ID (kid)",
    algorithm: "HS256",
    key: () => Promise.resolve("new_secret_key"),
    verify: () => Promise.resolve(new TextEncoder().encode("new_secret_key")),
    kid: "my_super_secure_key_id_123",
  },
];
for (const kc of keyCases) {
  const run = async () => {
    const { client, stubs } = assertionClient("request_body");
    const c = claims();
    let key = await kc.key();
    let verifyKey = await kc.verify();
    if (key && typeof key === "object" && "privateKey" in (key as CryptoKeyPair)) {
      verifyKey = (key as CryptoKeyPair).publicKey;
      key = (key as CryptoKeyPair).privateKey;
    }
    await client.assertion.getToken(c, {
      algorithm: kc.algorithm,
      key: key as CryptoKey,
      ...(kc.kid ? { kid: kc.kid } : {}),
    });
    const jwt = stubs.requests[0].form.get("assertion")!;
    const { payload, protectedHeader } = await jose.jwtVerify(
      jwt,
      verifyKey as CryptoKey | Uint8Array,
      { algorithms: [kc.algorithm] },
    );
    return { c, payload, header: protectedHeader };
  };
  Deno.test(`${AS}: #get_token assembling a JWT assertion ${kc.ctx} indicates algorithm in the header`, async () => {
    assert.equal((await run()).header.alg, kc.algorithm);
  });
  Deno.test(`${AS}: #get_token assembling a JWT assertion ${kc.ctx} has claims`, async () => {
    const { c, payload } = await run();
    assert.deepEqual(Object.keys(payload).sort(), Object.keys(c).sort());
    assert.deepEqual({ ...payload }, c);
  });
  if (kc.kid) {
    Deno.test(`${AS}: #get_token assembling a JWT assertion ${kc.ctx} includes the kid in the JWT header`, async () => {
      assert.equal((await run()).header.kid, kc.kid);
    });
  }
}
Deno.test(`${AS}: #get_token with bad encoding params non-supported algorithms raises JWT::EncodeError (a TypeError naming the algorithm)`, async () => {
  const { client } = assertionClient("request_body");
  await assert.rejects(
    client.assertion.getToken(claims(), { algorithm: "the blockchain", key: "machine learning" }),
    (e: unknown) => e instanceof TypeError && /the blockchain/.test(e.message),
  );
});
Deno.test(`${AS}: #get_token with bad encoding params of a wrong object type raises ArgumentError (TypeError naming encoding)`, async () => {
  const { client } = assertionClient("request_body");
  await assert.rejects(
    client.assertion.getToken(claims(), "the cloud" as never),
    (e: unknown) => e instanceof TypeError && /encoding/.test(e.message),
  );
});
Deno.test(`${AS}: #get_token with bad encoding params missing encoding_opts[:algorithm] raises ArgumentError (TypeError naming encoding)`, async () => {
  const { client } = assertionClient("request_body");
  await assert.rejects(
    client.assertion.getToken(claims(), { key: "k" } as never),
    (e: unknown) => e instanceof TypeError && /encoding/.test(e.message),
  );
});
Deno.test(`${AS}: #get_token with bad encoding params missing encoding_opts[:key] raises ArgumentError (TypeError naming encoding)`, async () => {
  const { client } = assertionClient("request_body");
  await assert.rejects(
    client.assertion.getToken(claims(), { algorithm: "HS256" } as never),
    (e: unknown) => e instanceof TypeError && /encoding/.test(e.message),
  );
});
const enc = { algorithm: "HS256", key: "arowana" };
Deno.test(`${AS}: #get_token POST request parameters when using :auth_scheme => :request_body includes assertion and grant_type, along with the client parameters`, async () => {
  const { client, stubs } = assertionClient("request_body");
  await client.assertion.getToken(claims(), enc);
  const f = stubs.requests[0].form;
  assert.deepEqual([...f.keys()].sort(), ["assertion", "client_id", "client_secret", "grant_type"]);
  assert.equal(f.get("grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
  assert.equal(f.get("client_id"), "abc");
  assert.equal(f.get("client_secret"), "def");
});
Deno.test(`${AS}: #get_token POST request parameters when using :auth_scheme => :request_body includes other params via request_options`, async () => {
  const { client, stubs } = assertionClient("request_body");
  await client.assertion.getToken(claims(), enc, { scope: "dover sole" });
  const f = stubs.requests[0].form;
  assert.deepEqual([...f.keys()].sort(), [
    "assertion",
    "client_id",
    "client_secret",
    "grant_type",
    "scope",
  ]);
  assert.equal(f.get("scope"), "dover sole");
});
Deno.test(`${AS}: #get_token POST request parameters when using :auth_scheme => :basic_auth includes assertion and grant_type by default`, async () => {
  const { client, stubs } = assertionClient("basic_auth");
  await client.assertion.getToken(claims(), enc);
  const f = stubs.requests[0].form;
  assert.deepEqual([...f.keys()].sort(), ["assertion", "grant_type"]);
  assert.equal(f.get("grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
});
Deno.test(`${AS}: #get_token POST request parameters when using :auth_scheme => :basic_auth includes other params via request_options`, async () => {
  const { client, stubs } = assertionClient("basic_auth");
  await client.assertion.getToken(claims(), enc, { scope: "dover sole" });
  assert.deepEqual([...stubs.requests[0].form.keys()].sort(), ["assertion", "grant_type", "scope"]);
});
for (const mode of ["json", "formencoded"]) {
  const d = `#get_token returning the response when the content type is ${mode}`;
  const get = async (opts: Record<string, unknown> = {}) => {
    const { client } = assertionClient("request_body", mode);
    return { client, token: await client.assertion.getToken(claims(), enc, {}, opts) };
  };
  Deno.test(`${AS}: ${d} returns an AccessToken`, async () => {
    assert.ok((await get()).token instanceof AccessToken);
  });
  Deno.test(`${AS}: ${d} returns AccessToken with same Client`, async () => {
    const { client, token } = await get();
    assert.equal(token.client, client);
  });
  Deno.test(`${AS}: ${d} returns AccessToken with #token`, async () => {
    assert.equal((await get()).token.token, "salmon");
  });
  Deno.test(`${AS}: ${d} returns AccessToken with #expires_in`, async () => {
    assert.equal((await get()).token.expiresIn, 600);
  });
  Deno.test(`${AS}: ${d} returns AccessToken with #expires_at`, async () => {
    assert.notEqual((await get()).token.expiresAt, undefined);
  });
  Deno.test(`${AS}: ${d} sets AccessToken#refresh_token to nil (the spec body expects "trout")`, async () => {
    assert.equal((await get()).token.refreshToken, "trout");
  });
  Deno.test(`${AS}: ${d} with custom response_opts passes them into the token params`, async () => {
    const opts = { custom_token_option: "mackerel" };
    assert.deepEqual((await get(opts)).token.params, opts);
  });
  Deno.test(`${AS}: ${d} when no custom opts are passed in does not set any params by default`, async () => {
    assert.deepEqual((await get()).token.params, {});
  });
}

// An error response of the token endpoint is an OAuthError (used by the strategies).
Deno.test(`${CC}: (port check) a refused token request is an OAuthError`, async () => {
  const { client } = stubbedClient("abc", "def", { site: "http://api.example.com" }, (stub) => {
    stub.post("/oauth/token", () => [401, JSONCT, '{"error":"invalid_client"}']);
  });
  await assert.rejects(client.clientCredentials.getToken(), OAuthError);
});

/**
 * Port of ruby-oauth/oauth2 spec/oauth2/access_token_spec.rb: one Deno test
 * per example, named "access_token_spec.rb: <context> <example>".
 *
 * Documented differences: options are camelCase members (`refreshToken`,
 * `expiresAt`), requests return Promises; an invalid `mode` is a TypeError
 * when the token is built (the gem raises on the first request), so the
 * "does not raise on initialize" examples of an invalid mode assert the
 * TypeError instead; the no-token error is an OAuthError with code
 * `no_token`; `refresh()` without a refresh token and `revoke()` with a bad
 * hint reject with an Error / TypeError (no response to attach); a nil token
 * is the empty string (TypeScript: `token` is a string); Ruby's `Time.now`
 * stubbing is replaced by values relative to the real clock.
 * Not ported: `access_token_class` / `refresh!` (no such option: `refresh()`
 * returns an AccessToken), revoke with a block (no Faraday request block),
 * Hashie-version skips are run.
 */
import assert from "node:assert/strict";
import { AccessToken, type Client, configure, OAuthError } from "../../../mod.ts";
import { captureLogger, type Reply, stubbedClient, type Stubs } from "./_faraday.ts";

const S = "access_token_spec.rb";
const VERBS = ["get", "post", "put", "delete", "patch"] as const;
const now = () => Math.floor(Date.now() / 1000);

function makeClient(
  opts: { raiseErrors?: boolean } = {},
  token = "monkey",
  refreshBody = JSON.stringify({
    access_token: "refreshed_foo",
    expires_in: 600,
    refresh_token: "refresh_bar",
  }),
): { client: Client; stubs: Stubs; logger: ReturnType<typeof captureLogger> } {
  const logger = captureLogger();
  const { client, stubs } = stubbedClient(
    "abc",
    "def",
    { site: "https://api.example.com", logger, ...opts },
    (stub) => {
      for (const verb of VERBS) {
        const add = (path: string, h: (e: Parameters<Parameters<Stubs["get"]>[1]>[0]) => Reply) =>
          verb === "get" || verb === "delete" ? stub[verb](path, h) : stub[verb](path, h);
        add("/token/header", (env) => [200, {}, env.requestHeaders.get("authorization")]);
        add(
          `/token/query?access_token=${token}`,
          (env) => [200, {}, env.url.searchParams.get("access_token")],
        );
        add("/token/query_string", (env) => [200, {}, decodeURIComponent(env.url.search.slice(1))]);
        add("/token/body", (env) => [200, {}, env.body]);
      }
      stub.post("/oauth/token", () => [200, { "Content-Type": "application/json" }, refreshBody]);
      stub.post("/oauth/revoke", (env) => [200, { "Content-type": "application/json" }, env.body]);
    },
  );
  return { client, stubs, logger };
}

async function withConfig<T>(
  c: { silenceExtraTokensWarning?: boolean; silenceNoTokensWarning?: boolean },
  fn: () => T | Promise<T>,
): Promise<T> {
  const before = { silenceExtraTokensWarning: true, silenceNoTokensWarning: true };
  configure((x) => Object.assign(x, c));
  try {
    return await fn();
  } finally {
    configure((x) => Object.assign(x, before));
  }
}

// .from_hash
const F = `${S}: .from_hash`;
const fullHash = () => ({
  access_token: "monkey",
  id_token: "confusing bug here",
  refresh_token: "foobar",
  expires_at: now() + 200,
  foo: "bar",
  header_format: "Bearer %",
  mode: "header",
  param_name: "access_token",
});
Deno.test(`${F} return a hash equals to the hash used to initialize access token`, () => {
  const hash = fullHash();
  assert.deepEqual(AccessToken.fromHash(makeClient().client, hash).toHash(), hash);
});
Deno.test(`${F} with warning for too many tokens warns on STDERR (the client's logger)`, async () => {
  const { client, logger } = makeClient();
  await withConfig(
    { silenceExtraTokensWarning: false },
    () => AccessToken.fromHash(client, fullHash()),
  );
  assert.equal(logger.lines.length, 1);
  assert.match(
    logger.lines[0],
    /more than one token field \(access_token, id_token\); using "access_token"/,
  );
});
Deno.test(`${F} with warning for too many tokens when one token does not warn on STDERR`, async () => {
  const { client, logger } = makeClient();
  await withConfig(
    { silenceExtraTokensWarning: false },
    () => AccessToken.fromHash(client, { access_token: "monkey" }),
  );
  assert.deepEqual(logger.lines, []);
});
Deno.test(`${F} with warning for too many tokens when silenced does not warn on STDERR`, async () => {
  const { client, logger } = makeClient();
  await withConfig(
    { silenceExtraTokensWarning: true },
    () => AccessToken.fromHash(client, fullHash()),
  );
  assert.deepEqual(logger.lines, []);
});
Deno.test(`${F} with keys in a different order to the lookup warns on STDERR and selects the correct key`, async () => {
  const { client, logger } = makeClient();
  const t = await withConfig(
    { silenceExtraTokensWarning: false },
    () => AccessToken.fromHash(client, { id_token: "confusing bug here", access_token: "monkey" }),
  );
  assert.equal(t.token, "monkey");
  assert.match(logger.lines[0], /\(access_token, id_token\); using "access_token"/);
});
const noKeys = { blather: "confusing bug here", rather: "monkey" };
Deno.test(`${F} with warning for no token keys raises an error`, async () => {
  const { client } = makeClient({ raiseErrors: true });
  await withConfig({ silenceNoTokensWarning: false }, () => {
    assert.throws(() => AccessToken.fromHash(client, noKeys), (e: unknown) => {
      assert.ok(e instanceof OAuthError);
      assert.equal(e.code, "no_token");
      return true;
    });
  });
});
Deno.test(`${F} with warning for no token keys when not raising errors warns on STDERR`, async () => {
  const { client, logger } = makeClient({ raiseErrors: false });
  await withConfig({ silenceNoTokensWarning: false }, () => AccessToken.fromHash(client, noKeys));
  assert.equal(logger.lines.at(-1), "AccessToken has no token");
});
const lollipop = () => ({
  lollipop: "monkey",
  expires_at: now() + 200,
  foo: "bar",
  header_format: "Bearer %",
  mode: "header",
  param_name: "lollipop",
  token_name: "lollipop",
});
Deno.test(`${F} with warning for no token keys when not raising errors when custom token_name valid finds token`, () => {
  assert.equal(
    AccessToken.fromHash(makeClient({ raiseErrors: false }).client, lollipop()).token,
    "monkey",
  );
});
Deno.test(`${F} with warning for no token keys when not raising errors when custom token_name valid does not warn when token is found`, async () => {
  const { client, logger } = makeClient({ raiseErrors: false });
  await withConfig(
    { silenceNoTokensWarning: false },
    () => AccessToken.fromHash(client, lollipop()),
  );
  assert.deepEqual(logger.lines, []);
});
const babyshark = () => {
  const { lollipop: _, ...rest } = lollipop();
  return { babyshark: "monkey", ...rest };
};
const invalidName =
  `${F} with warning for no token keys when not raising errors when custom token_name invalid`;
Deno.test(`${invalidName} when silence_no_tokens_warning is false finds no token`, async () => {
  const { client } = makeClient({ raiseErrors: false });
  await withConfig(
    { silenceNoTokensWarning: false },
    () => assert.equal(AccessToken.fromHash(client, babyshark()).token, ""),
  );
});
Deno.test(`${invalidName} when silence_no_tokens_warning is false warns when no token is found`, async () => {
  const { client, logger } = makeClient({ raiseErrors: false });
  await withConfig(
    { silenceNoTokensWarning: false },
    () => AccessToken.fromHash(client, babyshark()),
  );
  assert.equal(logger.lines.length, 2);
  assert.match(
    logger.lines[0],
    /token_name "lollipop" is not among the keys \(babyshark, expires_at/,
  );
  assert.match(logger.lines[0], /snaky: false/);
  assert.equal(logger.lines[1], "AccessToken has no token");
});
Deno.test(`${invalidName} when silence_no_tokens_warning is true finds no token`, async () => {
  const { client } = makeClient({ raiseErrors: false });
  await withConfig(
    { silenceNoTokensWarning: true },
    () => assert.equal(AccessToken.fromHash(client, babyshark()).token, ""),
  );
});
Deno.test(`${invalidName} when silence_no_tokens_warning is true does not warn when no token is found`, async () => {
  const { client, logger } = makeClient({ raiseErrors: false });
  await withConfig(
    { silenceNoTokensWarning: true },
    () => AccessToken.fromHash(client, babyshark()),
  );
  assert.deepEqual(logger.lines, []);
});

// #initialize
const I = `${S}: #initialize`;
function assertInitialized(t: AccessToken) {
  assert.equal(t.token, "monkey");
  assert.ok(t.expires());
  assert.ok("foo" in t.params);
  assert.equal(t.params.foo, "bar");
}
Deno.test(`${I} assigns client and token`, () => {
  const { client } = makeClient();
  const t = new AccessToken(client, "monkey");
  assert.equal(t.client, client);
  assert.equal(t.token, "monkey");
});
Deno.test(`${I} assigns extra params`, () => {
  const t = new AccessToken(makeClient().client, "monkey", { foo: "bar" });
  assert.equal(t.params.foo, "bar");
});
Deno.test(`${I} initializes with a Hash`, () => {
  assertInitialized(
    AccessToken.fromHash(makeClient().client, {
      access_token: "monkey",
      expires_at: now() + 200,
      foo: "bar",
    }),
  );
});
Deno.test(`${I} from_hash does not modify opts hash`, () => {
  const hash = { access_token: "monkey", expires_at: now() };
  const before = { ...hash };
  AccessToken.fromHash(makeClient().client, hash);
  assert.deepEqual(hash, before);
});
Deno.test(`${I} initializes with a form-urlencoded key/value string`, () => {
  assertInitialized(
    AccessToken.fromKvform(
      makeClient().client,
      `access_token=monkey&expires_at=${now() + 200}&foo=bar`,
    ),
  );
});
const O = `${I} with options`;
Deno.test(`${O} with body mode sets options`, () => {
  const t = new AccessToken(makeClient().client, "monkey", {
    param_name: "foo",
    header_format: "Bearer %",
    mode: "body",
  });
  assert.equal(t.options.param_name, "foo");
  assert.equal(t.options.header_format, "Bearer %");
  assert.equal(t.options.mode, "body");
});
Deno.test(`${O} with header mode sets options`, () => {
  const t = new AccessToken(makeClient().client, "monkey", { headers: {}, mode: "header" });
  assert.equal((t.options as unknown as Record<string, unknown>).headers, undefined);
  assert.equal(t.options.mode, "header");
});
Deno.test(`${O} with query mode sets options`, () => {
  const t = new AccessToken(makeClient().client, "monkey", {
    params: {},
    param_name: "foo",
    mode: "query",
  });
  assert.equal(t.options.param_name, "foo");
  assert.equal((t.options as unknown as Record<string, unknown>).params, undefined);
  assert.equal(t.options.mode, "query");
});
const badMode = { mode: "this_is_bad" as never };
for (
  const ctx of [
    "with invalid mode",
    "with invalid mode with client.options[:raise_errors] = true when there is a token",
  ]
) {
  Deno.test(`${O} ${ctx} does not raise on initialize (a TypeError at construction: documented)`, () => {
    assert.throws(() => new AccessToken(makeClient().client, "monkey", badMode), /this_is_bad/);
  });
  Deno.test(`${O} ${ctx} with request raises`, () => {
    const t = new AccessToken(makeClient().client, "monkey");
    (t.options as { mode: unknown }).mode = "this_is_bad";
    assert.throws(() => t.post("/token/header"), /this_is_bad/);
  });
}
for (const ctx of ["when there is empty token", "when there is nil token (the empty string)"]) {
  Deno.test(`${O} with invalid mode with client.options[:raise_errors] = true ${ctx} raises on initialize`, () => {
    assert.throws(
      () => new AccessToken(makeClient({ raiseErrors: true }).client, "", { raise_errors: true }),
      (e: unknown) => e instanceof OAuthError && e.code === "no_token",
    );
  });
}
const verbMode = (verb: string) =>
  verb === "get" ? "query" : verb === "post" || verb === "delete" ? "header" : "body";
for (const verb of VERBS) {
  Deno.test(`${O} with verb-dependent mode correctly handles a ${verb.toUpperCase()}`, async () => {
    const t = new AccessToken(makeClient().client, "monkey", { mode: verbMode });
    assert.ok((await t[verb](`/token/${verbMode(verb)}`)).body.includes("monkey"));
  });
}
Deno.test(`${O} with verb-dependent mode when invalid correctly handles an invalid mode by raising an error`, () => {
  const t = new AccessToken(makeClient().client, "monkey", { mode: () => "foobar" as never });
  assert.throws(() => t.get("/token/foobar"), /foobar/);
});
const modeHash = {
  get: "query",
  post: "header",
  delete: "header",
  put: "body",
  patch: "body",
} as const;
for (const verb of VERBS) {
  Deno.test(`${O} with verb-dependent Hash mode correctly handles a ${verb.toUpperCase()} via Hash`, async () => {
    const t = new AccessToken(makeClient().client, "monkey", { mode: modeHash });
    assert.ok((await t[verb](`/token/${modeHash[verb]}`)).body.includes("monkey"));
  });
}
Deno.test(`${O} with verb-dependent Hash mode with fallback to :header for missing key defaults POST to header when not specified`, async () => {
  const t = new AccessToken(makeClient().client, "monkey", { mode: { get: "query" } });
  assert.ok((await t.post("/token/header")).body.includes("monkey"));
});
Deno.test(`${O} with verb-dependent Hash mode when invalid value raises an error for invalid mapping (TypeError at construction)`, () => {
  assert.throws(
    () => new AccessToken(makeClient().client, "monkey", { mode: { get: "foobar" as never } }),
    /foobar/,
  );
});
for (const raiseErrors of [false, true]) {
  const R = `${O} with client.options[:raise_errors] = ${raiseErrors}`;
  const build = (token: string, refresh?: string) =>
    new AccessToken(makeClient({ raiseErrors }).client, token, {
      raise_errors: raiseErrors,
      ...(refresh ? { refresh_token: refresh } : {}),
    });
  Deno.test(`${R} when there is a token does not raise on initialize`, () =>
    void build("hurdygurdy"));
  Deno.test(`${R} when there is a token has token`, () =>
    assert.equal(build("hurdygurdy").token, "hurdygurdy"));
  Deno.test(`${R} when there is a token has no refresh_token`, () =>
    assert.equal(build("hurdygurdy").refreshToken, undefined));
  Deno.test(`${R} when there is a token when there is refresh_token does not raise on initialize`, () =>
    void build("hurdygurdy", "zxcv"));
  Deno.test(`${R} when there is a token when there is refresh_token has token`, () =>
    assert.equal(build("hurdygurdy", "zxcv").token, "hurdygurdy"));
  Deno.test(`${R} when there is a token when there is refresh_token has refresh_token`, () =>
    assert.equal(build("hurdygurdy", "zxcv").refreshToken, "zxcv"));
  for (
    const [ctx, refresh] of [["when there is empty token", "qwer"], [
      "when there is nil token (the empty string)",
      "asdf",
    ]]
  ) {
    if (raiseErrors) {
      Deno.test(`${R} ${ctx} when there is no refresh_token raises on initialize`, () => {
        assert.throws(
          () => build(""),
          (e: unknown) => e instanceof OAuthError && /has no token/.test(e.message),
        );
      });
    } else {
      Deno.test(`${R} ${ctx} when there is no refresh_token does not raise on initialize`, () =>
        void build(""));
      Deno.test(`${R} ${ctx} when there is no refresh_token has no token`, () =>
        assert.equal(build("").token, ""));
      Deno.test(`${R} ${ctx} when there is no refresh_token has no refresh_token`, () =>
        assert.equal(build("").refreshToken, undefined));
      Deno.test(`${R} ${ctx} when there is no refresh_token with warning for no token warns on STDERR`, async () => {
        const { client, logger } = makeClient({ raiseErrors: false });
        await withConfig({ silenceNoTokensWarning: false }, () => new AccessToken(client, ""));
        assert.deepEqual(logger.lines, ["AccessToken has no token"]);
      });
    }
    Deno.test(`${R} ${ctx} when there is refresh_token does not raise on initialize`, () =>
      void build("", refresh));
    Deno.test(`${R} ${ctx} when there is refresh_token has no token`, () =>
      assert.equal(build("", refresh).token, ""));
    Deno.test(`${R} ${ctx} when there is refresh_token has refresh_token`, () =>
      assert.equal(build("", refresh).refreshToken, refresh));
  }
}
Deno.test(`${I} does not modify opts hash`, () => {
  const opts = { param_name: "foo", header_format: "Bearer %", mode: "body" as const };
  const before = { ...opts };
  new AccessToken(makeClient().client, "monkey", opts);
  assert.deepEqual(opts, before);
});
const EXP = 1_361_396_829;
for (
  const [ex, value] of [
    ["initializes with an integer timestamp expires_at", EXP],
    ["initializes with a string timestamp expires_at", String(EXP)],
    ["initializes with a string time expires_at", new Date(EXP * 1000).toISOString()],
  ] as const
) {
  Deno.test(`${I} expires_at ${ex}`, () => {
    const t = AccessToken.fromHash(makeClient().client, {
      access_token: "monkey",
      expires_at: value,
      foo: "bar",
    });
    assertInitialized(t);
    assert.equal(t.expiresAt, EXP);
  });
}
const latencyHash = { access_token: "monkey", expires_latency: 10, expires_in: 100 };
Deno.test(`${I} expires_latency sets it via options`, () => {
  const t = AccessToken.fromHash(makeClient().client, { ...latencyHash, expires_latency: "10" });
  assert.equal(t.expiresLatency, 10);
});
Deno.test(`${I} expires_latency sets it nil by default`, () => {
  const { expires_latency: _, ...hash } = latencyHash;
  assert.equal(AccessToken.fromHash(makeClient().client, hash).expiresLatency, undefined);
});
Deno.test(`${I} expires_latency reduces expires_at by the given amount`, () => {
  const before = now();
  const t = AccessToken.fromHash(makeClient().client, latencyHash);
  const after = now();
  assert.ok(t.expiresAt! >= before + 100 - 10 && t.expiresAt! <= after + 100 - 10);
});
Deno.test(`${I} expires_latency reduces expires_at by the given amount if expires_at is provided as option`, () => {
  const t = AccessToken.fromHash(makeClient().client, {
    ...latencyHash,
    expires_at: 1_530_000_000,
  });
  assert.equal(t.expiresAt, 1_530_000_000 - 10);
});

// #request
const Q = `${S}: #request`;
for (const verb of VERBS) {
  Deno.test(`${Q} with :mode => :header sends the token in the Authorization header for a ${verb.toUpperCase()} request`, async () => {
    const t = new AccessToken(makeClient().client, "monkey");
    t.options.mode = "header";
    assert.ok((await t.post("/token/header")).body.includes("monkey"));
  });
  Deno.test(`${Q} with :mode => :query sends the token in the body for a ${verb.toUpperCase()} request`, async () => {
    const t = new AccessToken(makeClient().client, "monkey");
    t.options.mode = "query";
    assert.equal((await t.post("/token/query")).body, "monkey");
  });
  Deno.test(`${Q} with :mode => :query sends a ${verb.toUpperCase()} request and options[:param_name] include [number].`, async () => {
    const t = new AccessToken(makeClient().client, "monkey");
    t.options.mode = "query";
    t.options.param_name = "auth[1]";
    assert.ok((await t[verb]("/token/query_string")).body.includes("auth[1]=monkey"));
  });
  Deno.test(`${Q} with :mode => :body sends the token in the body for a ${verb.toUpperCase()} request`, async () => {
    const t = new AccessToken(makeClient().client, "monkey");
    t.options.mode = "body";
    assert.equal((await t.post("/token/body")).body.split("=").at(-1), "monkey");
  });
  Deno.test(`${Q} with :mode => :body when options[:param_name] include [number] sends a ${verb.toUpperCase()} request when body is a hash`, async () => {
    const t = new AccessToken(makeClient().client, "monkey");
    t.options.mode = "body";
    t.options.param_name = "auth[1]";
    if (verb === "get") {
      // fetch sends no body with GET: a TypeError instead of a request without the token
      assert.throws(() => t.get("/token/body", { body: { hi: "there" } }), TypeError);
      return;
    }
    assert.ok(
      (await t[verb]("/token/body", { body: { hi: "there" } })).body.includes("auth%5B1%5D=monkey"),
    );
  });
  Deno.test(`${Q} with :mode => :body when options[:param_name] include [number] sends a ${verb.toUpperCase()} request when body is overridden as string (the name form-encoded)`, async () => {
    const t = new AccessToken(makeClient().client, "monkey");
    t.options.mode = "body";
    t.options.param_name = "snoo[1]";
    if (verb === "get") {
      assert.throws(() => t.get("/token/body", { body: "hi_there" }), TypeError);
      return;
    }
    const body = (await t[verb]("/token/body", { body: "hi_there" })).body;
    assert.ok(body.includes("hi_there&snoo%5B1%5D=monkey"), body);
  });
  Deno.test(`${Q} with params including [number] sends ${verb.toUpperCase()} correct query`, async () => {
    const t = new AccessToken(makeClient().client, "monkey");
    assert.ok(
      (await t[verb]("/token/query_string", { params: { "foo[bar][1]": "val" } })).body.includes(
        "foo[bar][1]=val",
      ),
    );
  });
}

// #expires? / #expired?
const E = `${S}: #expires?`;
Deno.test(`${E} is false if there is no expires_at`, () =>
  assert.equal(new AccessToken(makeClient().client, "monkey").expires(), false));
Deno.test(`${E} is true if there is an expires_in`, () =>
  assert.ok(
    new AccessToken(makeClient().client, "monkey", { refresh_token: "abaca", expires_in: 600 })
      .expires(),
  ));
Deno.test(`${E} is true if there is an expires_at`, () =>
  assert.ok(
    new AccessToken(makeClient().client, "monkey", {
      refresh_token: "abaca",
      expires_in: now() + 600,
    }).expires(),
  ));
const X = `${S}: #expired?`;
Deno.test(`${X} is false if there is no expires_in or expires_at`, () =>
  assert.equal(new AccessToken(makeClient().client, "monkey").expired(), false));
Deno.test(`${X} is false if expires_in is 0 (token is permanent)`, () =>
  assert.equal(
    new AccessToken(makeClient().client, "monkey", { refresh_token: "abaca", expires_in: 0 })
      .expired(),
    false,
  ));
Deno.test(`${X} is false if expires_in is in the future`, () =>
  assert.equal(
    new AccessToken(makeClient().client, "monkey", { refresh_token: "abaca", expires_in: 10_800 })
      .expired(),
    false,
  ));
Deno.test(`${X} is true if expires_at is in the past`, () =>
  assert.ok(
    new AccessToken(makeClient().client, "monkey", {
      refresh_token: "abaca",
      expires_at: now() - 10_800 + 600,
    }).expired(),
  ));
Deno.test(`${X} is true if expires_at is now`, () =>
  assert.ok(
    new AccessToken(makeClient().client, "monkey", { refresh_token: "abaca", expires_at: now() })
      .expired(),
  ));

// #refresh
const RF = `${S}: #refresh`;
const access = (c: Client) =>
  new AccessToken(c, "monkey", { refresh_token: "abaca", expires_in: 600, param_name: "o_param" });
Deno.test(`${RF} without refresh_token raises when no refresh_token`, async () => {
  const t = new AccessToken(makeClient().client, "monkey", {
    refresh_token: undefined,
    expires_in: 600,
  });
  await assert.rejects(t.refresh(), /A refresh_token is not available/);
});
Deno.test(`${RF} returns a refresh token with appropriate values carried over`, async () => {
  const { client } = makeClient();
  const a = access(client);
  const refreshed = await a.refresh();
  assert.equal(refreshed.client, a.client);
  assert.equal(refreshed.options.param_name, a.options.param_name);
});
for (
  const [ctx, body, token, refresh] of [
    [
      "with a nil refresh_token in the response",
      { access_token: "refreshed_foo", expires_in: 600, refresh_token: null },
      "refreshed_foo",
      "abaca",
    ],
    [
      "with a not-nil refresh_token in the response",
      { access_token: "refreshed_foo", expires_in: 600, refresh_token: "qerwer" },
      "refreshed_foo",
      "qerwer",
    ],
    [
      "with a not-nil, not camel case, refresh_token in the response",
      { accessToken: "refreshed_foo", expires_in: 600, refreshToken: "qerwer" },
      "refreshed_foo",
      "qerwer",
    ],
  ] as const
) {
  Deno.test(`${RF} ${ctx} copies the refresh_token from the original token`, async () => {
    const { client } = makeClient({}, "monkey", JSON.stringify(body));
    const refreshed = await access(client).refresh();
    assert.equal(refreshed.token, token);
    assert.equal(refreshed.refreshToken, refresh);
  });
}

// #revoke
const RV = `${S}: #revoke`;
const revocable = () => {
  const m = makeClient();
  return { ...m, t: new AccessToken(m.client, "monkey123", { refresh_token: "refreshmonkey123" }) };
};
Deno.test(`${RV} with no token_type_hint specified revokes the access token by default`, async () => {
  const { t, stubs } = revocable();
  assert.equal((await t.revoke()).status, 200);
  assert.equal(stubs.requests.at(-1)!.form.get("token"), "monkey123");
});
Deno.test(`${RV} with access_token token_type_hint revokes the access token`, async () => {
  const { t, stubs } = revocable();
  await t.revoke({ token_type_hint: "access_token" });
  assert.equal(stubs.requests.at(-1)!.form.get("token_type_hint"), "access_token");
});
Deno.test(`${RV} with refresh_token token_type_hint revokes the refresh token`, async () => {
  const { t, stubs } = revocable();
  await t.revoke({ token_type_hint: "refresh_token" });
  assert.equal(stubs.requests.at(-1)!.form.get("token"), "refreshmonkey123");
});
Deno.test(`${RV} with invalid token_type_hint raises an OAuth2::Error (a TypeError)`, async () => {
  const { t } = revocable();
  await assert.rejects(t.revoke({ token_type_hint: "invalid_type" as never }), TypeError);
});
Deno.test(`${RV} when refresh_token is specified but not available raises an OAuth2::Error (an Error)`, async () => {
  const t = new AccessToken(makeClient().client, "abc");
  await assert.rejects(
    t.revoke({ token_type_hint: "refresh_token" }),
    /refresh_token is not available for revoking/,
  );
});
Deno.test(`${RV} when refresh_token is, but access_token is not, available revokes refresh_token`, async () => {
  const { client, stubs } = makeClient();
  const t = new AccessToken(client, "abc", { refresh_token: "refreshmonkey123" });
  t.token = "";
  await t.revoke();
  assert.equal(stubs.requests.at(-1)!.form.get("token_type_hint"), "refresh_token");
});
Deno.test(`${RV} when no tokens are available raises an OAuth2::Error (an Error)`, async () => {
  const t = new AccessToken(makeClient().client, "abc");
  t.token = "";
  await assert.rejects(t.revoke(), /not available for revoking/);
});
Deno.test(`${RV} with additional params passes them to the client`, async () => {
  const { t, stubs } = revocable();
  await t.revoke({ extra: "param" });
  assert.equal(stubs.requests.at(-1)!.form.get("extra"), "param");
});

// #to_hash
Deno.test(`${S}: #to_hash return a hash equal to the hash used to initialize access token`, () => {
  const hash = {
    access_token: "monkey",
    refresh_token: "foobar",
    expires_at: now() + 200,
    header_format: "Bearer %",
    mode: "header",
    param_name: "access_token",
    foo: "bar",
  };
  assert.deepEqual(AccessToken.fromHash(makeClient().client, { ...hash }).toHash(), hash);
});
Deno.test(`${S}: #to_hash with token_name return a hash equal to the hash used to initialize access token`, () => {
  const hash = {
    access_token: "",
    refresh_token: "foobar",
    expires_at: now() + 200,
    header_format: "Bearer %",
    mode: "header",
    param_name: "access_token",
    token_name: "banana_face",
    foo: "bar",
  };
  assert.deepEqual(AccessToken.fromHash(makeClient().client, { ...hash }).toHash(), hash);
});

// #inspect
const inspected = () =>
  Deno.inspect(
    new AccessToken(makeClient().client, "secret-token", { refresh_token: "secret-refresh-token" }),
  );
Deno.test(`${S}: #inspect filters out the @token value`, () => {
  assert.match(inspected(), /token: "\[FILTERED\]"/);
  assert.ok(!inspected().includes("secret-token"));
});
Deno.test(`${S}: #inspect filters out the @refresh_token value`, () => {
  assert.match(inspected(), /refreshToken: "\[FILTERED\]"/);
  assert.ok(!inspected().includes("secret-refresh-token"));
});

/** AccessToken: expiry math, modes, hashes, kvform, revocation hints, inspection. */
import assert from "node:assert/strict";
import { AccessToken, Client, config, configure, OAuthError } from "../../mod.ts";
import { json, recordingLogger, startStub } from "./_stub.ts";

const now = () => Math.floor(Date.now() / 1000);
const client = new Client("id", "Secr3t-value-xyz", { site: "https://api.example.com" });

Deno.test("expiry: expires_in (number or string), expires_at, expires_latency", () => {
  const a = new AccessToken(client, "t", { expires_in: "120" });
  assert.equal(a.expiresIn, 120);
  assert.ok(Math.abs(a.expiresAt! - (now() + 120)) <= 1);
  assert.equal(a.expires(), true);
  assert.equal(a.expired(), false);

  const b = new AccessToken(client, "t", { expires_in: 120, expires_latency: 130 });
  assert.equal(b.expiresLatency, 130);
  assert.equal(b.expired(), true, "latency larger than lifetime: already expired");

  const c = new AccessToken(client, "t", { expires_at: now() - 1 });
  assert.equal(c.expired(), true);
  const d = new AccessToken(client, "t", { expires_at: String(now() + 50), expires_latency: 10 });
  assert.ok(Math.abs(d.expiresAt! - (now() + 40)) <= 1);

  const forever = new AccessToken(client, "t", {});
  assert.equal(forever.expires(), false);
  assert.equal(forever.expired(), false);
  assert.equal(new AccessToken(client, "t", { expires_in: 0 }).expires(), false);
  const iso = new AccessToken(client, "t", { expires_at: "2001-01-01T00:00:00Z" });
  assert.equal(iso.expiresAt, 978307200);
});

Deno.test("fromHash picks access_token, else id_token, token; token_name chooses", () => {
  const a = AccessToken.fromHash(client, { id_token: "id", access_token: "acc", scope: "s" });
  assert.equal(a.token, "acc");
  assert.equal(a.params.id_token, "id", "the other token fields stay in params");
  assert.equal(a.params.scope, "s");
  assert.equal(AccessToken.fromHash(client, { id_token: "only-id" }).token, "only-id");
  assert.equal(AccessToken.fromHash(client, { token: "plain" }).token, "plain");
  const named = AccessToken.fromHash(client, {
    access_token: "acc",
    custom_token: "mine",
    token_name: "customToken",
  });
  assert.equal(named.token, "mine");
  assert.equal(named.options.token_name, "customToken");
});

Deno.test("extra-tokens and no-token warnings follow the configuration", () => {
  const logger = recordingLogger();
  // raiseErrors false: with it on, a hash without any token is an OAuthError (as in the gem)
  const c = new Client("id", "s", { site: "https://x.example", logger, raiseErrors: false });
  AccessToken.fromHash(c, { access_token: "a", id_token: "b" });
  AccessToken.fromHash(c, { refresh_token: "r" });
  assert.deepEqual(logger.lines, [], "silenced by default");
  const saved = { ...config };
  configure((cfg) => {
    cfg.silenceExtraTokensWarning = false;
    cfg.silenceNoTokensWarning = false;
  });
  try {
    AccessToken.fromHash(c, { access_token: "a", id_token: "b" });
    AccessToken.fromHash(c, { refresh_token: "r" });
    AccessToken.fromHash(c, { access_token: "a", token_name: "missing" });
  } finally {
    configure((cfg) => {
      cfg.silenceExtraTokensWarning = saved.silenceExtraTokensWarning;
      cfg.silenceNoTokensWarning = saved.silenceNoTokensWarning;
    });
  }
  assert.equal(logger.lines.length, 4);
  assert.match(
    logger.lines[0],
    /more than one token field \(access_token, id_token\); using "access_token"/,
  );
  assert.match(logger.lines[1], /no token field/);
  assert.match(logger.lines[2], /token_name "missing"/);
  assert.equal(logger.lines[3], "AccessToken has no token");
  const raising = new Client("id", "s", { site: "https://x.example", logger });
  assert.throws(() => AccessToken.fromHash(raising, { token_name: "missing" }), OAuthError);
});

Deno.test("toHash round-trips through fromHash", () => {
  const token = new AccessToken(client, "tok", {
    refresh_token: "ref",
    expires_in: 300,
    mode: "query",
    param_name: "bearer_token",
    header_format: "OAuth %s",
    token_type: "bearer",
    scope: "read",
  });
  const hash = token.toHash();
  const back = AccessToken.fromHash(client, JSON.parse(JSON.stringify(hash)));
  assert.equal(back.token, "tok");
  assert.equal(back.refreshToken, "ref");
  assert.equal(back.expiresAt, token.expiresAt);
  assert.deepEqual(back.options, token.options);
  assert.deepEqual(back.params, { token_type: "bearer", scope: "read" });
  assert.deepEqual(back.toHash(), hash);
});

Deno.test("fromKvform reads an implicit-grant callback fragment", () => {
  const token = AccessToken.fromKvform(
    client,
    "#access_token=abc%20def&token_type=bearer&expires_in=3600&state=xyz",
  );
  assert.equal(token.token, "abc def");
  assert.equal(token.expiresIn, 3600);
  assert.equal(token.params.state, "xyz");
  assert.throws(() => AccessToken.fromKvform(client, 5 as never), /"kvform"/);
});

Deno.test("mode: function of the verb, map by verb, body placement", async () => {
  await using stub = startStub((req) =>
    json({
      auth: req.headers.get("authorization"),
      query: req.url.searchParams.get("access_token"),
      body: req.body,
    })
  );
  const c = new Client("id", "s", { site: stub.url });
  const byFn = new AccessToken(c, "T1", { mode: (verb) => (verb === "get" ? "query" : "header") });
  assert.deepEqual((await byFn.get("/r")).parsedHash, { auth: null, query: "T1", body: "" });
  assert.equal((await byFn.delete("/r")).parsedHash?.auth, "Bearer T1");
  const byMap = new AccessToken(c, "T2", { mode: { get: "header", put: "body", patch: "body" } });
  assert.equal((await byMap.get("/r")).parsedHash?.auth, "Bearer T2");
  assert.equal(
    (await byMap.put("/r", { body: { a: "1" } })).parsedHash?.body,
    "a=1&access_token=T2",
  );
  assert.equal((await byMap.patch("/r", { body: "x=2" })).parsedHash?.body, "x=2&access_token=T2");
  assert.equal(
    (await byMap.post("/r")).parsedHash?.auth,
    "Bearer T2",
    "unlisted verbs use the header",
  );
  assert.throws(() => new AccessToken(c, "t", { mode: "cookie" as never }), /"mode"/);
  assert.throws(() => new AccessToken(c, "t", { mode: { get: "cookie" } as never }), /"mode.get"/);
});

Deno.test("revoke chooses the token by hint and refuses what is missing", async () => {
  await using stub = startStub(() => new Response("", { status: 200 }));
  const c = new Client("id", "s", { site: stub.url });
  const token = new AccessToken(c, "acc-1", { refresh_token: "ref-1" });
  await token.revoke();
  assert.deepEqual([stub.last().form.get("token"), stub.last().form.get("token_type_hint")], [
    "acc-1",
    "access_token",
  ]);
  await token.revoke({ token_type_hint: "refresh_token" });
  assert.equal(stub.last().form.get("token"), "ref-1");
  await assert.rejects(token.revoke({ token_type_hint: "id_token" as never }), TypeError);
  await assert.rejects(
    new AccessToken(c, "a").revoke({ token_type_hint: "refresh_token" }),
    /not available/,
  );
  const refreshOnly = new AccessToken(c, "", { refresh_token: "ref-2" });
  await refreshOnly.revoke();
  assert.equal(stub.last().form.get("token_type_hint"), "refresh_token");
});

Deno.test("inspecting a token or client shows the filtered label, never the secrets", () => {
  const secretToken = "ya29.a0AfB_byC-REAL-LOOKING-token-9f8e7d";
  const secretRefresh = "1//0gRefresh-Token-Value-abc123XYZ";
  const c = new Client("client-id", "GOCSPX-9xK2mQ7vR4tZ8wL1nB5c", {
    site: "https://oauth2.googleapis.com",
    clientAssertionKey: "-----BEGIN PRIVATE KEY-----\nMIIEvQ...\n-----END PRIVATE KEY-----",
  });
  const token = new AccessToken(c, secretToken, {
    refresh_token: secretRefresh,
    id_token: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    scope: "email",
  });
  for (
    const text of [
      Deno.inspect(token, { depth: 5 }),
      Deno.inspect(c, { depth: 5 }),
      JSON.stringify(c),
    ]
  ) {
    for (
      const secret of [
        secretToken,
        secretRefresh,
        "GOCSPX-9xK2mQ7vR4tZ8wL1nB5c",
        "MIIEvQ",
        "eyJzdWIiOiIxIn0",
      ]
    ) {
      assert.ok(!text.includes(secret), `${secret} leaked in ${text}`);
    }
  }
  const shown = Deno.inspect(token);
  assert.match(shown, /^AccessToken /);
  assert.match(shown, /\[FILTERED\]/);
  assert.match(shown, /email/);
  assert.match(Deno.inspect(c), /client-id/);
  assert.equal(c.secret, "GOCSPX-9xK2mQ7vR4tZ8wL1nB5c", "the secret stays usable");
});

Deno.test("wrong argument types of AccessToken give a TypeError naming the argument", () => {
  assert.throws(() => new AccessToken({} as never, "t"), /"client"/);
  assert.throws(() => new AccessToken(client, 5 as never), /"token"/);
  assert.throws(() => new AccessToken(client, "t", [] as never), /"opts"/);
  assert.throws(
    () => new AccessToken(client, "t", { header_format: 1 as never }),
    /"header_format"/,
  );
  assert.throws(() => AccessToken.fromHash(client, "x" as never), /"hash"/);
});

/**
 * Credentials never follow a redirect to another origin (issue 22, section 2).
 *
 * Two real origins (two `Deno.serve` on different ports): `home` answers every
 * request with a redirect of the status in its path to `away`, which records
 * what reached it. The rule under test: credential headers are removed; a
 * credential that cannot be removed (in a body the redirect resends, or in the
 * new location's query) makes the redirect an `OAuthError`
 * `cross_origin_redirect` and nothing reaches `away`.
 */
import assert from "node:assert/strict";
import { AccessToken, Client, OAuthError } from "../../mod.ts";
import { json, type SeenRequest, startStub, type Stub } from "./_stub.ts";

const STATUSES = [301, 302, 303, 307, 308] as const;
/** Statuses after which the method and body are kept (302 and 303 become GET). */
const KEEPS_BODY = new Set([301, 307, 308]);
const TOKEN = "tok-Zq9-very-secret";
const SECRET = "client-S3cret-value";
const API_KEY = "key-Xy7-secret";

/** `home` redirects `/<status>/<anything>` to `away` (with the query when asked to). */
function origins(): { home: Stub; away: Stub } {
  const away = startStub((req) =>
    json({ access_token: "from-away", method: req.method, seen: req.url.pathname })
  );
  const home = startStub((req) => {
    const [, status, kind] = req.url.pathname.split("/");
    if (kind === "same") {
      if (req.url.searchParams.has("done")) return json({ ok: true });
      return new Response(null, { status: Number(status), headers: { location: "?done=1" } });
    }
    const search = kind === "keep-query" ? req.url.search : "";
    return new Response(null, {
      status: Number(status),
      headers: { location: `${away.url}/landed${search}` },
    });
  });
  return { home, away };
}

/** Fails when `req` holds any of the credentials anywhere (URL, headers, body). */
function assertClean(req: SeenRequest, ...credentials: string[]): void {
  const everything = [
    req.url.href,
    ...[...req.headers].map(([k, v]) => `${k}: ${v}`),
    req.body,
  ].join("\n");
  for (const c of credentials) {
    assert.ok(!everything.includes(c), `"${c}" reached the other origin:\n${everything}`);
    assert.ok(!everything.includes(encodeURIComponent(c)));
  }
}

function isCrossOriginError(status: number) {
  return (e: unknown) => {
    assert.ok(e instanceof OAuthError, String(e));
    assert.equal(e.code, "cross_origin_redirect");
    assert.match(e.message, new RegExp(`status ${status}`));
    for (const s of [TOKEN, SECRET, API_KEY]) assert.ok(!e.message.includes(s));
    return true;
  };
}

for (const status of STATUSES) {
  Deno.test(`${status} to another origin: header-mode token and marked headers are removed, others kept`, async () => {
    const { home, away } = origins();
    await using _h = home;
    await using _a = away;
    const client = new Client("id", SECRET, { site: home.url, credentialHeaders: ["X-Api-Key"] });
    const token = new AccessToken(client, TOKEN);
    const res = await token.post(`/${status}/x`, {
      body: { a: "1" },
      headers: { "X-Api-Key": API_KEY, "X-Per-Request": API_KEY, "X-Marker": "kept" },
      credentialHeaders: ["x-per-request"],
    });
    assert.equal(res.status, 200);
    assert.equal(away.requests.length, 1);
    const seen = away.last();
    assert.equal(seen.headers.get("authorization"), null);
    assert.equal(seen.headers.get("x-api-key"), null);
    assert.equal(seen.headers.get("x-per-request"), null);
    assert.equal(seen.headers.get("x-marker"), "kept");
    assert.equal(seen.method, KEEPS_BODY.has(status) ? "POST" : "GET");
    assert.equal(seen.body, KEEPS_BODY.has(status) ? "a=1" : "");
    assertClean(seen, TOKEN, API_KEY, SECRET);
    // the first hop had them all
    assert.equal(home.last().headers.get("authorization"), `Bearer ${TOKEN}`);
    assert.equal(home.last().headers.get("x-api-key"), API_KEY);
  });

  Deno.test(`${status} to another origin: default connection headers marked as credentials are removed`, async () => {
    const { home, away } = origins();
    await using _h = home;
    await using _a = away;
    const client = new Client("id", SECRET, {
      site: home.url,
      credentialHeaders: ["x-api-key"],
      connectionOpts: { headers: { "X-Api-Key": API_KEY, Cookie: `sid=${API_KEY}` } },
    });
    await client.request("get", `/${status}/x`);
    assert.equal(home.last().headers.get("x-api-key"), API_KEY);
    assertClean(away.last(), API_KEY);
  });

  Deno.test(`${status} to another origin: a body-mode token is never resent`, async () => {
    const { home, away } = origins();
    await using _h = home;
    await using _a = away;
    const client = new Client("id", SECRET, { site: home.url });
    const token = new AccessToken(client, TOKEN, { mode: "body" });
    if (KEEPS_BODY.has(status)) {
      await assert.rejects(
        token.post(`/${status}/x`, { body: { a: "1" } }),
        isCrossOriginError(status),
      );
      await assert.rejects(token.put(`/${status}/x`, { body: "a=1" }), isCrossOriginError(status));
      assert.equal(away.requests.length, 0);
    } else {
      // 302/303 turn the request into a GET without body: the token stays home
      const res = await token.post(`/${status}/x`, { body: { a: "1" } });
      assert.equal(res.status, 200);
      assert.equal(away.last().method, "GET");
      assertClean(away.last(), TOKEN);
    }
    assert.ok(home.last().body.includes(`access_token=${TOKEN}`));
  });

  Deno.test(`${status} to another origin: a query-mode token in the new location is refused`, async () => {
    const { home, away } = origins();
    await using _h = home;
    await using _a = away;
    const client = new Client("id", SECRET, { site: home.url });
    const token = new AccessToken(client, TOKEN, { mode: "query" });
    await assert.rejects(token.get(`/${status}/keep-query`), isCrossOriginError(status));
    assert.equal(away.requests.length, 0);
    assert.equal(home.last().url.searchParams.get("access_token"), TOKEN);
    // a location without the token is followed, without it
    const res = await token.get(`/${status}/x`);
    assert.equal(res.status, 200);
    assertClean(away.last(), TOKEN);
  });

  Deno.test(`${status} to another origin: the client secret and the grant never leave the token endpoint's origin`, async () => {
    const { home, away } = origins();
    await using _h = home;
    await using _a = away;
    for (const authScheme of ["request_body", "basic_auth"] as const) {
      const client = new Client("id", SECRET, {
        site: home.url,
        tokenUrl: `/${status}/token`,
        authScheme,
      });
      if (KEEPS_BODY.has(status)) {
        await assert.rejects(client.password.getToken("ann", TOKEN), isCrossOriginError(status));
        assert.equal(away.requests.length, 0);
      } else {
        await client.password.getToken("ann", TOKEN);
        assertClean(away.last(), SECRET, TOKEN, btoa(`id:${SECRET}`));
      }
    }
    // tokenMethod "get": the secret and the password are in the query
    const viaQuery = new Client("id", SECRET, {
      site: home.url,
      tokenUrl: `/${status}/keep-query`,
      authScheme: "request_body",
      tokenMethod: "get",
    });
    const before = away.requests.length;
    await assert.rejects(viaQuery.password.getToken("ann", TOKEN), isCrossOriginError(status));
    assert.equal(away.requests.length, before);
  });

  Deno.test(`${status} within the origin: every credential is kept`, async () => {
    const { home, away } = origins();
    await using _h = home;
    await using _a = away;
    const client = new Client("id", SECRET, { site: home.url, credentialHeaders: ["X-Api-Key"] });
    const token = new AccessToken(client, TOKEN, { mode: "body" });
    const res = await token.post(`/${status}/same`, { headers: { "X-Api-Key": API_KEY } });
    assert.equal(res.status, 200);
    const final = home.last();
    assert.equal(final.url.searchParams.get("done"), "1");
    assert.equal(final.headers.get("x-api-key"), API_KEY);
    if (KEEPS_BODY.has(status)) assert.equal(final.form.get("access_token"), TOKEN);
    assert.equal(away.requests.length, 0);
  });
}

Deno.test("credentialHeaders must be an array of header names", async () => {
  assert.throws(
    () => new Client("id", "s", { credentialHeaders: "X-Api-Key" as unknown as string[] }),
    TypeError,
  );
  const client = new Client("id", "s", { site: "http://127.0.0.1:1" });
  await assert.rejects(
    client.request("get", "/", { credentialHeaders: [1] as unknown as string[] }),
    TypeError,
  );
});

Deno.test("a location that merely contains a short secret by chance is followed", async () => {
  await using away = startStub((req) => json({ q: req.url.search }));
  await using home = startStub(() =>
    new Response(null, { status: 302, headers: { location: `${away.url}/x?next=undefined` } })
  );
  const client = new Client("id", "def", { site: home.url });
  const res = await client.request("get", "/r");
  assert.equal((res.parsed as { q: string }).q, "?next=undefined");
});

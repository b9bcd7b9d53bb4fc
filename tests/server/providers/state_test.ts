/**
 * The OAuth state and the callback's failure paths: tampering, replay,
 * expiry, a foreign redirect target, a provider that reports an error or
 * refuses the code, and ID tokens that do not match. Every failure lands on
 * the site with error, error_code and error_description, never a bare 500.
 */
import assert from "node:assert/strict";
import { jose } from "../../../deps.ts";
import { createApp } from "../../../server/app.ts";
import { OAuthStates, StateError } from "../../../server/auth/oauth_state.ts";
import { verifyIdToken } from "../../../server/providers/id_token.ts";
import { ProviderError } from "../../../server/providers/types.ts";
import { startProviderFake } from "../../helpers/provider_fakes.ts";
import { startTestServer } from "../../helpers/server.ts";
import {
  defaultUser,
  land,
  REDIRECT_URI,
  redirectOf,
  serverWithFakes,
  signIn,
  SITE,
  withCookies,
} from "./_helpers.ts";

/** A clock the test moves. */
function movableClock() {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance: (sec: number) => (offset += sec * 1000),
  };
}

Deno.test("state: sealed, tamper-evident, expiring, single use", async () => {
  const srv = await startTestServer();
  try {
    const clock = movableClock();
    const states = new OAuthStates(srv.db, "a-secret-of-the-server-0123456789", clock);
    const sealed = await states.seal({
      provider: "github",
      redirectTo: "http://localhost:3000/x",
      nonce: "n1",
      providerVerifier: "our-pkce-verifier-that-must-stay-hidden",
    });
    assert.ok(!sealed.includes("our-pkce-verifier"), "the verifier is not readable");
    assert.ok(!atobAll(sealed).includes("our-pkce-verifier"), "not even after base64 decoding");
    const opened = await states.open(sealed);
    assert.equal(opened.provider, "github");
    assert.equal(opened.providerVerifier, "our-pkce-verifier-that-must-stay-hidden");

    // Any changed character is refused.
    const parts = sealed.split(".");
    const ct = parts[3];
    parts[3] = (ct[0] === "A" ? "B" : "A") + ct.slice(1);
    await assert.rejects(states.open(parts.join(".")), (e: StateError) => e.problem === "tampered");
    await assert.rejects(states.open("not-a-state"), (e: StateError) => e.problem === "malformed");
    // Sealed with another server's secret.
    const foreign = await new OAuthStates(srv.db, "another-secret-0123456789abcdef", clock).seal({
      provider: "github",
      redirectTo: "http://evil.example/",
      nonce: "n",
    });
    await assert.rejects(states.open(foreign), (e: StateError) => e.problem === "tampered");

    await states.consume(opened);
    await assert.rejects(states.consume(opened), (e: StateError) => e.problem === "replayed");

    clock.advance(601);
    await assert.rejects(states.open(sealed), (e: StateError) => {
      assert.equal(e.problem, "expired");
      assert.equal(e.data?.redirectTo, "http://localhost:3000/x", "where to tell the user");
      return true;
    });
  } finally {
    await srv.close();
  }
});

function atobAll(jwe: string): string {
  return jwe.split(".").map((p) => {
    try {
      return new TextDecoder().decode(jose.base64url.decode(p));
    } catch {
      return "";
    }
  }).join("");
}

Deno.test("callback failures redirect with error, error_code and error_description", async (t) => {
  const clock = movableClock();
  const fake = await startProviderFake("github", { user: defaultUser() });
  const slack = await startProviderFake("slack", { user: defaultUser() });
  const srv = await startTestServer({
    ...fake.env(REDIRECT_URI),
    ...slack.env(REDIRECT_URI),
    AUTHSVC_URI_ALLOW_LIST: "https://app.example.com/**",
  }, { clock });
  const start = (redirectTo?: string, provider = "github") =>
    redirectOf(
      srv,
      `/authorize?${new URLSearchParams({
        provider,
        ...(redirectTo ? { redirect_to: redirectTo } : {}),
      })}`,
    );
  const expectError = (l: { hash: URLSearchParams; query: URLSearchParams }, code: string) => {
    assert.equal(l.hash.get("error_code"), code, l.hash.get("error_description") ?? "");
    assert.ok(l.hash.get("error"));
    assert.ok(l.hash.get("error_description"));
    assert.equal(l.query.get("error_code"), code);
    assert.equal(l.hash.get("access_token"), null);
  };
  try {
    await t.step("a tampered state lands on SITE_URL with bad_oauth_state", async () => {
      const cb = await fake.approve((await start("https://app.example.com/in")).href);
      const u = new URL(cb.url);
      const st = u.searchParams.get("state")!;
      u.searchParams.set("state", st.slice(0, -3) + (st.endsWith("A") ? "BBB" : "AAA"));
      const l = await land(srv, { url: u.href, init: cb.init });
      assert.equal(l.status, 302);
      assert.equal(l.location.origin, SITE);
      expectError(l, "bad_oauth_state");
    });

    await t.step("a missing state is bad_oauth_callback", async () => {
      const l = await land(srv, { url: "http://x/callback?code=abc", init: {} });
      assert.equal(l.location.origin, SITE);
      expectError(l, "bad_oauth_callback");
    });

    await t.step("a replayed callback is refused on the target", async () => {
      const cb = await fake.approve((await start("https://app.example.com/in")).href);
      const first = await land(srv, cb);
      assert.ok(first.hash.get("access_token"));
      const again = await land(srv, cb);
      assert.equal(again.location.origin + again.location.pathname, "https://app.example.com/in");
      expectError(again, "bad_oauth_state");
      assert.match(again.hash.get("error_description")!, /already been used/);
    });

    await t.step("an expired state is refused", async () => {
      const cb = await fake.approve((await start("https://app.example.com/late")).href);
      clock.advance(11 * 60);
      const l = await land(srv, cb);
      assert.equal(l.location.href.split("?")[0], "https://app.example.com/late");
      expectError(l, "bad_oauth_state");
      assert.match(l.hash.get("error_description")!, /expired/);
    });

    await t.step("a foreign redirect_to is replaced by SITE_URL", async () => {
      for (const evil of ["https://evil.example/steal", "//evil.example", "javascript:alert(1)"]) {
        const cb = await fake.approve((await start(evil)).href);
        const l = await land(srv, cb);
        assert.equal(l.location.origin, SITE, evil);
        assert.ok(l.hash.get("access_token"), "the sign-in itself works");
      }
      const ok = await land(
        srv,
        await fake.approve((await start("https://app.example.com/a/b")).href),
      );
      assert.equal(ok.location.href.split("#")[0], "https://app.example.com/a/b");
    });

    await t.step("the user declining consent", async () => {
      const cb = await fake.deny((await start("https://app.example.com/in")).href);
      const l = await land(srv, cb);
      assert.equal(l.location.href.split("?")[0], "https://app.example.com/in");
      expectError(l, "oauth_provider_error");
      assert.equal(l.hash.get("error"), "access_denied");
      assert.equal(l.hash.get("error_description"), "The user denied your request");
    });

    await t.step("the provider refusing the code (error bodies with status 200 too)", async () => {
      for (const f of [fake, slack]) {
        f.failNextToken();
        const l = await land(srv, await f.approve((await start(undefined, f.name)).href));
        expectError(l, "oauth_provider_error");
        assert.equal(l.hash.get("error"), "server_error");
        assert.equal(l.hash.get("error_description"), "Unable to exchange external code");
      }
      assert.deepEqual(fake.problems, []);
      assert.deepEqual(slack.problems, []);
    });

    await t.step("a callback without a code", async () => {
      const cb = await fake.approve((await start()).href);
      const u = new URL(cb.url);
      u.searchParams.delete("code");
      expectError(await land(srv, { url: u.href, init: cb.init }), "bad_oauth_callback");
    });

    await t.step("/authorize refuses unknown and disabled providers with a 400", async () => {
      for (
        const [p, code] of [["myspace", "validation_failed"], ["google", "provider_disabled"], [
          "",
          "validation_failed",
        ]]
      ) {
        const res = await srv.fetch(`/authorize?provider=${p}`, { redirect: "manual" });
        assert.equal(res.status, 400);
        assert.equal((await res.json()).error_code, code);
      }
      const bad = await srv.fetch(
        "/authorize?provider=github&code_challenge=short&code_challenge_method=s256",
        {
          redirect: "manual",
        },
      );
      assert.equal(bad.status, 400);
      assert.match((await bad.json()).msg, /code_challenge/);
    });

    await t.step(
      "the provider's PKCE: S256 challenge out, verifier checked by the provider",
      async () => {
        const to = await start();
        assert.equal(to.searchParams.get("code_challenge_method"), "S256");
        assert.match(to.searchParams.get("code_challenge") ?? "", /^[A-Za-z0-9_-]{43}$/);
        const l = await land(srv, await fake.approve(to.href));
        assert.ok(l.hash.get("access_token"));
        assert.deepEqual(fake.problems, []);
      },
    );

    await t.step("a state never shows the PKCE verifier", async () => {
      const to = await start();
      const st = to.searchParams.get("state")!;
      assert.equal(st.split(".").length, 5, "a compact JWE");
      await fake.approve(to.href); // leave no unused code behind
    });
  } finally {
    await srv.close();
    await fake.close();
    await slack.close();
  }
});

Deno.test("ID tokens: signature, issuer, audience, expiry, nonce and at_hash are checked", async () => {
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true });
  const other = await jose.generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: "k1", alg: "ES256" };
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    () => Response.json({ keys: [jwk] }),
  );
  const iss = `http://127.0.0.1:${server.addr.port}`;
  const rules = { jwksUri: `${iss}/keys`, issuer: iss };
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>, key = privateKey) =>
    new jose.SignJWT({ sub: "u1", nonce: "n1", ...claims })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setIssuer(String(claims.iss ?? iss))
      .setAudience(String(claims.aud ?? "client-1"))
      .setIssuedAt(now)
      .setExpirationTime(Number(claims.exp ?? now + 600))
      .sign(key);
  const want = { rules, audience: "client-1", nonce: "n1", now: new Date(), accessToken: "at-1" };
  try {
    const good = await verifyIdToken(await sign({}), want);
    assert.equal(good.sub, "u1");
    const bad: [string, Record<string, unknown>, typeof privateKey?][] = [
      ["nonce", { nonce: "other" }],
      ["nonce missing", { nonce: undefined }],
      ["aud", { aud: "someone-else" }],
      ["iss", { iss: "https://evil.example" }],
      ["expired", { exp: now - 3600 }],
      ["at_hash", { at_hash: "AAAAAAAAAAAAAAAAAAAAAA" }],
      ["signature", {}, other.privateKey],
    ];
    for (const [what, claims, key] of bad) {
      await assert.rejects(verifyIdToken(await sign(claims, key), want), ProviderError, what);
    }
    await assert.rejects(verifyIdToken("not.a.jwt", want), ProviderError);
    // A provider that ignores the nonce (LinkedIn): none is required.
    const noNonce = { ...want, rules: { ...rules, nonce: false } };
    assert.equal((await verifyIdToken(await sign({ nonce: undefined }), noNonce)).sub, "u1");
    await assert.rejects(verifyIdToken(await sign({ aud: "x" }), noNonce), ProviderError);
  } finally {
    ac.abort();
    await server.finished;
  }
});

Deno.test("/authorize passes the caller's extra parameters on, never its own", async () => {
  const env = await serverWithFakes(["google"]);
  try {
    const q = new URLSearchParams({
      provider: "google",
      prompt: "consent",
      access_type: "offline",
      redirect_uri: "https://evil.example/cb",
      client_id: "someone-else",
      state: "chosen-by-attacker",
      scopes: "https://www.googleapis.com/auth/calendar.readonly",
    });
    const to = await redirectOf(env.srv, `/authorize?${q}`);
    assert.equal(to.searchParams.get("prompt"), "consent");
    assert.equal(to.searchParams.get("access_type"), "offline");
    assert.equal(to.searchParams.get("redirect_uri"), REDIRECT_URI);
    assert.equal(to.searchParams.get("client_id"), env.fakes.google.clientId);
    assert.notEqual(to.searchParams.get("state"), "chosen-by-attacker");
    assert.equal(
      to.searchParams.get("scope"),
      "openid email profile https://www.googleapis.com/auth/calendar.readonly",
    );
    assert.ok(!to.search.includes("+"), "spaces are sent as %20");
    const l = await land(env.srv, await env.fakes.google.approve(to.href));
    assert.ok(l.hash.get("access_token"));
    assert.deepEqual(env.fakes.google.problems, []);
  } finally {
    await env.close();
  }
});

Deno.test("a state fits X's 500-character limit with every member set", async () => {
  const srv = await startTestServer();
  try {
    const states = new OAuthStates(srv.db, "another-secret-0123456789abcdef", movableClock());
    const sealed = await states.seal({
      provider: "twitter",
      redirectTo: "https://app.example.com/auth/callback?next=/dashboard",
      nonce: "abcdefghijklmnopqrstuv",
      providerVerifier: "v".repeat(43),
      codeChallenge: "c".repeat(43),
      codeChallengeMethod: "s256",
      linkUserId: crypto.randomUUID(),
    });
    assert.ok(sealed.length <= 500, `${sealed.length} characters`);
  } finally {
    await srv.close();
  }
});

Deno.test("a state works once across two server processes sharing the database", async () => {
  const fake = await startProviderFake("github", { user: defaultUser() });
  const srv = await startTestServer(fake.env(REDIRECT_URI));
  // A second server on the same database and tables, as another process would be.
  const other = await createApp(srv.config, { db: srv.db, migrate: false });
  try {
    const cb = await fake.approve((await redirectOf(srv, "/authorize?provider=github")).href);
    const u = new URL(cb.url);
    const path = `${u.pathname}${u.search}`;
    // The browser's callback reaches both processes at once (a retry behind a load balancer).
    const browser = withCookies(srv, { redirect: "manual" });
    const answers = await Promise.all([
      srv.fetch(path, browser),
      other.fetch(new Request(`http://127.0.0.1${path}`, browser), "127.0.0.2"),
    ]);
    const hashes = await Promise.all(answers.map(async (r) => {
      await r.body?.cancel();
      assert.equal(r.status, 302);
      return new URLSearchParams(new URL(r.headers.get("location")!).hash.slice(1));
    }));
    const won = hashes.filter((h) => h.get("access_token"));
    const lost = hashes.filter((h) => h.get("error_code"));
    assert.equal(won.length, 1, "exactly one callback signs in");
    assert.equal(lost[0].get("error_code"), "bad_oauth_state");
    assert.match(lost[0].get("error_description")!, /already been used/);
    const exchanges = fake.requests.filter((r) => r === "POST /login/oauth/access_token");
    assert.equal(exchanges.length, 1, "the code went to the provider once");
  } finally {
    await other.close();
    await srv.close();
    await fake.close();
  }
});

Deno.test("a failing user-info call redirects with the error, not a 500", async () => {
  const names = ["discord", "twitch", "facebook"];
  const env = await serverWithFakes(names);
  try {
    // The provider issues a token, then its user endpoint refuses it with 401.
    for (const name of names) {
      const fake = env.fakes[name];
      fake.user = defaultUser();
      const to = await redirectOf(env.srv, `/authorize?provider=${name}`);
      const cb = await fake.approve(to.href);
      fake.refuseTokens();
      const l = await land(env.srv, cb);
      assert.equal(l.status, 302);
      assert.equal(l.location.origin, SITE);
      assert.equal(l.hash.get("access_token"), null);
      assert.equal(l.hash.get("error"), "server_error");
      assert.equal(l.hash.get("error_code"), "oauth_provider_error");
      assert.match(l.hash.get("error_description")!, /user info request failed/);
      for (const text of [l.hash.get("error_description")!, ...env.srv.logs]) {
        assert.ok(!text.includes(`at-${name}-`), `no provider token in ${text}`);
        assert.ok(!text.includes(fake.secret), `no client secret in ${text}`);
        assert.ok(!text.includes("appsecret_proof="), `no appsecret_proof in ${text}`);
      }
      const n = await env.srv.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${env.srv.db.t("users")}`,
      );
      assert.equal(n[0].n, 0, "no user was made");
    }
  } finally {
    await env.close();
  }
});

Deno.test("without redirect_to the user returns to the page they came from, when permitted", async () => {
  const env = await serverWithFakes(["gitlab"], {
    AUTHSVC_URI_ALLOW_LIST: "http://localhost:5173/**",
  });
  try {
    const fake = env.fakes.gitlab;
    const from = (referer: string, query: Record<string, string> = {}) => {
      fake.user = defaultUser();
      return signIn(env.srv, fake, { query, headers: { referer } });
    };
    const dev = await from("http://localhost:5173/login");
    assert.equal(dev.location.href.split("#")[0], "http://localhost:5173/login");
    assert.ok(dev.hash.get("access_token"));
    // A foreign page is no target: SITE_URL.
    const evil = await from("https://evil.example/phish");
    assert.equal(evil.location.origin, SITE);
    // redirect_to, when permitted, wins; when not, the Referer still counts.
    const asked = await from("http://localhost:5173/login", {
      redirect_to: "http://localhost:3000/done",
    });
    assert.equal(asked.location.href.split("#")[0], "http://localhost:3000/done");
    const refused = await from("http://localhost:5173/login", {
      redirect_to: "https://evil.example/",
    });
    assert.equal(refused.location.href.split("#")[0], "http://localhost:5173/login");
  } finally {
    await env.close();
  }
});

Deno.test("apple: a cancelled sign-in is posted back and lands on the target with the error", async () => {
  const env = await serverWithFakes(["apple"]);
  try {
    const to = await redirectOf(
      env.srv,
      "/authorize?provider=apple&redirect_to=http://localhost:3000/in",
    );
    const cb = await env.fakes.apple.deny(to.href);
    assert.equal(cb.init.method, "POST", "form_post");
    const l = await land(env.srv, cb);
    assert.equal(l.status, 303, "the browser GETs the target after a POST");
    assert.equal(l.location.href.split("?")[0], "http://localhost:3000/in");
    assert.equal(l.hash.get("error"), "user_cancelled_authorize");
    assert.equal(l.hash.get("error_code"), "oauth_provider_error");
    assert.equal(l.query.get("error"), "user_cancelled_authorize");
    assert.deepEqual(env.fakes.apple.problems, []);
  } finally {
    await env.close();
  }
});

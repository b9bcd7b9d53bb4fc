/**
 * Attacks on external sign-in through the OAuth `state` (issue 17, item 7;
 * beyond GoTrue): login CSRF, where a sign-in the attacker started with their
 * own provider account is finished in the victim's browser, which would sign
 * the victim into the attacker's account; the same through Apple's form_post;
 * and a leaked link URL finished by someone else, which would link their
 * provider account to the owner's (a way in) or hand them a session. The browser is the test's: a cookie jar per
 * server (tests/server/providers/_helpers.ts).
 */
import assert from "node:assert/strict";
import { authJsClient } from "../../helpers/auth_js.ts";
import { postJson } from "../../helpers/server.ts";
import {
  clearCookies,
  defaultUser,
  followLink,
  getUser,
  keepCookies,
  land,
  redirectOf,
  serverWithFakes,
  signIn,
  withCookies,
} from "../providers/_helpers.ts";

Deno.test("login CSRF: a sign-in started in the attacker's browser is refused in the victim's", async () => {
  const env = await serverWithFakes(["github"]);
  try {
    const fake = env.fakes.github;
    const res = await env.srv.fetch("/authorize?provider=github", { redirect: "manual" });
    await res.body?.cancel();
    const to = new URL(res.headers.get("location")!);
    const state = to.searchParams.get("state")!;
    // The cookie that binds the state to the attacker's browser.
    const [cookie] = res.headers.getSetCookie();
    assert.match(
      cookie,
      /^authsvc-oauth-[\w-]+=[\w-]+; Max-Age=600; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    assert.ok(!cookie.includes(state), "a hash of the state, not the state");

    // The attacker consents with their own account and sends the callback URL to the victim.
    fake.user = defaultUser();
    const cb = await fake.approve(to.href);
    const victim = await land(env.srv, cb); // the victim's browser: no cookie
    assert.equal(victim.hash.get("access_token"), null, "no session for the victim's browser");
    assert.equal(victim.query.get("error_code"), "bad_oauth_state");
    assert.match(victim.query.get("error_description")!, /not started in this browser/);
    assert.equal(victim.location.origin, "http://localhost:3000");
    assert.ok(
      !fake.requests.includes("POST /login/oauth/access_token"),
      "the code never went to the provider",
    );

    // The browser that started it signs in.
    const own = await land(env.srv, { url: cb.url, init: { headers: { cookie } } });
    assert.ok(own.hash.get("access_token"), own.location.href);

    // A cookie of another sign-in of this browser does not vouch for this one.
    clearCookies(env.srv);
    const mine = await redirectOf(env.srv, "/authorize?provider=github");
    assert.ok(mine.searchParams.get("state"));
    const theirs = await env.srv.fetch("/authorize?provider=github", { redirect: "manual" });
    await theirs.body?.cancel();
    const crossed = await land(env.srv, await fake.approve(theirs.headers.get("location")!));
    assert.equal(crossed.query.get("error_code"), "bad_oauth_state");
    assert.equal(crossed.hash.get("access_token"), null);
  } finally {
    await env.close();
  }
});

Deno.test("login CSRF through form_post: the cross-site POST is bounced to a GET that must carry the cookie", async () => {
  const env = await serverWithFakes(["apple"]);
  try {
    env.fakes.apple.user = defaultUser();
    const to = await redirectOf(env.srv, "/authorize?provider=apple");
    const cb = await env.fakes.apple.approve(to.href);
    assert.equal(cb.init.method, "POST");
    // A browser sends no SameSite=Lax cookie with a cross-site POST: the server answers
    // with a redirect to the same callback as a GET, which does carry it.
    const post = await env.srv.fetch(new URL(cb.url).pathname, { ...cb.init, redirect: "manual" });
    await post.body?.cancel();
    assert.equal(post.status, 303);
    const back = new URL(post.headers.get("location")!, new URL(cb.url));
    assert.equal(back.pathname, "/callback");
    assert.ok(back.searchParams.get("state") && back.searchParams.get("code"));
    // Another browser following it is refused ...
    const path = `${back.pathname}${back.search}`;
    const other = await land(env.srv, { url: back.href, init: { headers: { cookie: "x=y" } } });
    assert.equal(other.query.get("error_code"), "bad_oauth_state");
    // ... the browser that started it signs in.
    const res = await env.srv.fetch(path, withCookies(env.srv, { redirect: "manual" }));
    keepCookies(env.srv, res);
    await res.body?.cancel();
    const hash = new URLSearchParams(new URL(res.headers.get("location")!).hash.slice(1));
    assert.ok(hash.get("access_token"), res.headers.get("location")!);
    assert.deepEqual(env.fakes.apple.problems, []);
  } finally {
    await env.close();
  }
});

Deno.test("identity-link URL finished by someone else: refused, and never a session", async () => {
  const env = await serverWithFakes(["github", "google"]);
  try {
    // The account owner, signed in with GitHub, starts linking Google (auth-js, implicit).
    env.fakes.github.user = defaultUser();
    const first = await signIn(env.srv, env.fakes.github);
    const owner = authJsClient(env.srv.url);
    await owner.setSession({
      access_token: first.hash.get("access_token")!,
      refresh_token: first.hash.get("refresh_token")!,
    });
    const ownerId = (await owner.getUser()).data.user!.id;
    const link = await owner.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/linked" },
    });
    assert.equal(link.error, null);
    // The owner's browser opens the link: a single-use ticket that sets the state's cookie.
    clearCookies(env.srv);
    const atGoogle = await followLink(env.srv, link.data.url!);
    assert.ok(atGoogle.startsWith(env.fakes.google.url), atGoogle);
    const ticket = new URL(link.data.url!);
    const reused = await redirectOf(env.srv, `${ticket.pathname}${ticket.search}`);
    assert.equal(reused.searchParams.get("error_code"), "bad_oauth_state", "the ticket works once");
    assert.match(reused.searchParams.get("error_description")!, /already been used/);
    const ownerCookies = withCookies(env.srv).headers;

    // The provider URL leaks (history, a screenshot); someone finishes it with their own
    // Google account in their browser: refused, nothing linked, no tokens.
    clearCookies(env.srv);
    env.fakes.google.user = defaultUser();
    const thief = await land(env.srv, await env.fakes.google.approve(atGoogle));
    assert.equal(thief.query.get("error_code"), "bad_oauth_state");
    assert.equal(thief.hash.get("access_token"), null);
    const token = (await owner.getSession()).data.session!.access_token;
    const before = await getUser(env.srv, token);
    assert.deepEqual((before.body.identities as { provider: string }[]).map((i) => i.provider), [
      "github",
    ]);

    // Finished in the owner's browser it links, and still hands out no session (no PKCE).
    env.fakes.google.user = defaultUser();
    const cb = await env.fakes.google.approve(atGoogle);
    const mine = await land(env.srv, { url: cb.url, init: { ...cb.init, headers: ownerCookies } });
    assert.equal(mine.location.href.split("#")[0], "http://localhost:3000/linked");
    assert.equal(mine.hash.get("error"), null, mine.hash.get("error_description") ?? "");
    assert.equal(mine.hash.get("access_token"), null);
    assert.equal(mine.hash.get("refresh_token"), null);
    const me = await getUser(env.srv, token);
    assert.equal(me.body.id, ownerId);
    const providers = (me.body.identities as { provider: string }[]).map((i) => i.provider);
    assert.deepEqual(providers.sort(), ["github", "google"]);
  } finally {
    await env.close();
  }
});

Deno.test("identity-link CSRF: the attacker's own link URL finished by the victim links nothing (PKCE)", async () => {
  const env = await serverWithFakes(["github", "google"]);
  try {
    // The attacker, signed in with GitHub, starts linking Google through auth-js in the
    // PKCE flow: the code_verifier stays in the attacker's client.
    env.fakes.github.user = defaultUser();
    const first = await signIn(env.srv, env.fakes.github);
    const attacker = authJsClient(env.srv.url, "pkce");
    await attacker.setSession({
      access_token: first.hash.get("access_token")!,
      refresh_token: first.hash.get("refresh_token")!,
    });
    const attackerId = (await attacker.getUser()).data.user!.id;
    const link = await attacker.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/linked" },
    });
    assert.equal(link.error, null);

    // The attacker sends the link URL to the victim; the victim's browser opens it (the
    // ticket binds the state to the victim's browser) and the victim signs in at Google.
    clearCookies(env.srv);
    const victimGoogle = defaultUser();
    env.fakes.google.user = victimGoogle;
    const atGoogle = await followLink(env.srv, link.data.url!);
    const landed = await land(env.srv, await env.fakes.google.approve(atGoogle));
    assert.equal(landed.query.get("error"), null, landed.query.get("error_description") ?? "");
    assert.equal(landed.hash.get("access_token"), null, "no session in the victim's browser");
    const code = landed.query.get("code");
    assert.ok(code, landed.location.href);

    // Nothing is linked yet: the attacker's account still has GitHub only.
    const token = (await attacker.getSession()).data.session!.access_token;
    const ids = async () =>
      ((await getUser(env.srv, token)).body.identities as { provider: string }[])
        .map((i) => i.provider).sort();
    assert.deepEqual(await ids(), ["github"]);

    // The code is in the victim's browser, whose client has no matching verifier: the
    // exchange fails, and still nothing is linked.
    const victimApp = authJsClient(env.srv.url, "pkce");
    const tried = await victimApp.exchangeCodeForSession(code);
    assert.ok(tried.error, "the victim's browser exchanged the attacker's code");
    const guessed = await postJson(env.srv, "/token?grant_type=pkce", {
      auth_code: code,
      code_verifier: "v".repeat(43),
    });
    assert.ok(guessed.status === 400 || guessed.status === 404, JSON.stringify(guessed.body));
    assert.deepEqual(await ids(), ["github"]);

    // The victim's Google account belongs to nobody: signing in with it makes a new
    // account of the victim's own, not the attacker's.
    clearCookies(env.srv);
    env.fakes.google.user = victimGoogle;
    const own = await signIn(env.srv, env.fakes.google);
    const victimToken = own.hash.get("access_token");
    assert.ok(victimToken, own.location.href);
    const victim = await getUser(env.srv, victimToken);
    assert.notEqual(victim.body.id, attackerId);
    assert.deepEqual(
      (victim.body.identities as { provider: string }[]).map((i) => i.provider),
      ["google"],
    );
  } finally {
    await env.close();
  }
});

Deno.test("identity link in the PKCE flow: linked at the code exchange, in the browser that started it", async () => {
  const env = await serverWithFakes(["github", "google"]);
  try {
    env.fakes.github.user = defaultUser();
    const first = await signIn(env.srv, env.fakes.github);
    const owner = authJsClient(env.srv.url, "pkce");
    await owner.setSession({
      access_token: first.hash.get("access_token")!,
      refresh_token: first.hash.get("refresh_token")!,
    });
    const ownerId = (await owner.getUser()).data.user!.id;
    const link = await owner.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/linked" },
    });
    assert.equal(link.error, null);
    env.fakes.google.user = defaultUser();
    const landed = await land(
      env.srv,
      await env.fakes.google.approve(await followLink(env.srv, link.data.url!)),
    );
    const code = landed.query.get("code");
    assert.ok(code, landed.location.href);
    const { data, error } = await owner.exchangeCodeForSession(code);
    assert.equal(error, null);
    assert.equal(data.user?.id, ownerId);
    assert.deepEqual(data.user?.identities?.map((i) => i.provider).sort(), ["github", "google"]);
    assert.deepEqual((data.user?.app_metadata.providers as string[]).sort(), ["github", "google"]);

    // A provider account someone else linked between the callback and the exchange: the
    // exchange says so (422 identity_already_exists) and links nothing.
    const again = await owner.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/linked" },
    });
    const other = defaultUser();
    env.fakes.google.user = other;
    const second = await land(
      env.srv,
      await env.fakes.google.approve(await followLink(env.srv, again.data.url!)),
    );
    const code2 = second.query.get("code")!;
    assert.ok(code2, second.location.href);
    clearCookies(env.srv);
    env.fakes.google.user = other;
    const taken = await signIn(env.srv, env.fakes.google);
    assert.ok(taken.hash.get("access_token"), "someone signs up with that Google account");
    const late = await owner.exchangeCodeForSession(code2);
    assert.equal(late.error?.code, "identity_already_exists");
    const me = await owner.getUser();
    assert.equal(me.data.user?.identities?.length, 2);
  } finally {
    await env.close();
  }
});

Deno.test("SECURITY_LINK_IDENTITY_REQUIRE_PKCE: an implicit-flow link is refused, a PKCE one works", async () => {
  const env = await serverWithFakes(["github", "google"], {
    AUTHSVC_SECURITY_LINK_IDENTITY_REQUIRE_PKCE: "true",
  });
  try {
    env.fakes.github.user = defaultUser();
    const first = await signIn(env.srv, env.fakes.github);
    const tokens = {
      access_token: first.hash.get("access_token")!,
      refresh_token: first.hash.get("refresh_token")!,
    };
    const implicit = authJsClient(env.srv.url, "implicit");
    await implicit.setSession(tokens);
    const refused = await implicit.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true },
    });
    assert.equal(refused.error?.status, 400);
    assert.match(refused.error?.message ?? "", /PKCE/);

    const pkce = authJsClient(env.srv.url, "pkce");
    await pkce.setSession(tokens);
    const link = await pkce.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/linked" },
    });
    assert.equal(link.error, null);
    env.fakes.google.user = defaultUser();
    const landed = await land(
      env.srv,
      await env.fakes.google.approve(await followLink(env.srv, link.data.url!)),
    );
    const { data, error } = await pkce.exchangeCodeForSession(landed.query.get("code")!);
    assert.equal(error, null);
    assert.deepEqual(data.user?.identities?.map((i) => i.provider).sort(), ["github", "google"]);
  } finally {
    await env.close();
  }
});

/**
 * External providers through the official client, @supabase/auth-js:
 * signInWithOAuth (implicit and PKCE with exchangeCodeForSession),
 * linkIdentity and unlinkIdentity with the notification mails.
 */
import assert from "node:assert/strict";
import { AuthClient } from "../../helpers/deps.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { postJson, type TestServer } from "../../helpers/server.ts";
import {
  defaultUser,
  followLink,
  type Json,
  keepCookies,
  land,
  serverWithFakes,
  withCookies,
} from "./_helpers.ts";

function client(url: string, flowType: "implicit" | "pkce") {
  return new AuthClient({ url, autoRefreshToken: false, persistSession: false, flowType });
}

/** Follows the server's redirect to the provider (what the browser would do, keeping the cookie). */
async function toProvider(srv: TestServer, url: string): Promise<string> {
  const res = await fetch(url, withCookies(srv, { redirect: "manual" }));
  keepCookies(srv, res);
  await res.body?.cancel();
  assert.equal(res.status, 302, url);
  return res.headers.get("location")!;
}

Deno.test("auth-js signInWithOAuth: implicit fragment and PKCE exchangeCodeForSession", async (t) => {
  const env = await serverWithFakes(["github"]);
  try {
    const fake = env.fakes.github;
    await t.step("implicit", async () => {
      const auth = client(env.srv.url, "implicit");
      fake.user = defaultUser();
      const { data, error } = await auth.signInWithOAuth({
        provider: "github",
        options: {
          skipBrowserRedirect: true,
          redirectTo: "http://localhost:3000/cb",
          scopes: "repo gist",
        },
      });
      assert.equal(error, null);
      const at = new URL(await toProvider(env.srv, data.url!));
      assert.equal(at.searchParams.get("scope"), "user:email repo gist");
      const l = await land(env.srv, await fake.approve(at.href));
      assert.equal(l.location.origin + l.location.pathname, "http://localhost:3000/cb");
      const set = await auth.setSession({
        access_token: l.hash.get("access_token")!,
        refresh_token: l.hash.get("refresh_token")!,
      });
      assert.equal(set.error, null);
      assert.equal(set.data.user?.email, fake.user.email);
      assert.equal(set.data.user?.identities?.[0].provider, "github");
      assert.equal(set.data.user?.app_metadata.provider, "github");
    });

    await t.step("pkce", async () => {
      const auth = client(env.srv.url, "pkce");
      fake.user = defaultUser();
      const { data } = await auth.signInWithOAuth({
        provider: "github",
        options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/cb" },
      });
      const authorize = new URL(data.url!);
      assert.ok(authorize.searchParams.get("code_challenge"));
      const l = await land(env.srv, await fake.approve(await toProvider(env.srv, data.url!)));
      assert.equal(l.hash.get("access_token"), null, "no tokens in the URL in the PKCE flow");
      const code = l.query.get("code")!;
      assert.ok(code, l.location.href);
      const { data: s, error } = await auth.exchangeCodeForSession(code);
      assert.equal(error, null);
      assert.equal(s.user?.email, fake.user.email);
      assert.match(s.session?.provider_token ?? "", /^at-github-/);
      // The code works once.
      const again = await postJson(env.srv, "/token?grant_type=pkce", {
        auth_code: code,
        code_verifier: "x".repeat(43),
      });
      assert.equal(again.status, 404);
      assert.deepEqual(fake.problems, []);
    });
  } finally {
    await env.close();
  }
});

Deno.test("auth-js linkIdentity and unlinkIdentity, with notification mails", async () => {
  const smtp = await startSmtp();
  const env = await serverWithFakes(["google", "discord"], {
    ...smtp.env,
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_LINKED_ENABLED: "true",
    AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_UNLINKED_ENABLED: "true",
  });
  try {
    const email = `linker-${crypto.randomUUID().slice(0, 6)}@example.org`;
    const auth = client(env.srv.url, "implicit");
    const up = await auth.signUp({ email, password: "a-long-password-1" });
    assert.equal(up.error, null);
    const userId = up.data.user!.id;

    // Link a google account with another address: the user stays the same.
    env.fakes.google.user = defaultUser({
      email: `other-${crypto.randomUUID().slice(0, 6)}@gmail.test`,
    });
    const link = await auth.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true, redirectTo: "http://localhost:3000/linked" },
    });
    assert.equal(link.error, null);
    assert.ok(link.data.url?.startsWith("http://localhost:8081/"), link.data.url ?? "");
    const atGoogle = await followLink(env.srv, link.data.url!);
    assert.ok(atGoogle.startsWith(env.fakes.google.url), atGoogle);
    const l = await land(env.srv, await env.fakes.google.approve(atGoogle));
    assert.equal(l.location.origin + l.location.pathname, "http://localhost:3000/linked");
    assert.equal(l.hash.get("error"), null, l.hash.get("error_description") ?? "");
    // A link (without PKCE) hands out no session: the app keeps the one it has.
    assert.equal(l.hash.get("access_token"), null);
    const after = await auth.getUser();
    assert.equal(after.data.user?.id, userId);
    assert.equal(after.data.user?.email, email, "the address stays the account's");
    const mail = await smtp.waitForMail(email, { subject: /identity/i });
    assert.match(mail.text, /google/);

    const ids = await auth.getUserIdentities();
    const providers = ids.data!.identities.map((i) => i.provider).sort();
    assert.deepEqual(providers, ["email", "google"]);

    // The same google account cannot be linked again, to this or another user.
    const dup = await auth.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true },
    });
    const dupLanding = await land(
      env.srv,
      await env.fakes.google.approve(await followLink(env.srv, dup.data.url!)),
    );
    assert.equal(dupLanding.hash.get("error_code"), "identity_already_exists");

    // An unknown identity id, or not a UUID.
    const token = (await auth.getSession()).data.session!.access_token;
    const res = await env.srv.fetch(`/user/identities/${crypto.randomUUID()}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 422);
    assert.equal((await res.json()).error_code, "identity_not_found");
    const notUuid = await env.srv.fetch("/user/identities/abc", {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(notUuid.status, 404);
    assert.match((await notUuid.json()).msg, /identity_id/);

    // Unlink google.
    const google = ids.data!.identities.find((i) => i.provider === "google")!;
    const un = await auth.unlinkIdentity(google);
    assert.equal(un.error, null);
    const unMail = await smtp.waitForMail(email, { subject: /unlinked/i });
    assert.match(unMail.text, /google/);
    await auth.refreshSession();
    const left = await auth.getUserIdentities();
    assert.deepEqual(left.data!.identities.map((i) => i.provider), ["email"]);
    const { data: me } = await auth.getUser();
    assert.deepEqual((me.user?.app_metadata as Json).providers, ["email"]);

    // The last identity cannot go.
    const last = await auth.unlinkIdentity(left.data!.identities[0]);
    assert.equal(last.error?.code, "single_identity_not_deletable");
    assert.equal(last.error?.status, 422);

    // Linking needs a signed-in user.
    const anon = await env.srv.fetch("/user/identities/authorize?provider=google", {
      redirect: "manual",
    });
    assert.equal(anon.status, 401);
    await anon.body?.cancel();
  } finally {
    await env.close();
    await smtp.close();
  }
});

Deno.test("/settings shows each provider's enabled flag", async () => {
  const env = await serverWithFakes(["github", "notion"]);
  try {
    const settings = await (await env.srv.fetch("/settings")).json();
    assert.equal(settings.external.github, true);
    assert.equal(settings.external.notion, true);
    assert.equal(settings.external.google, false);
    assert.equal(settings.external.keycloak, false);
  } finally {
    await env.close();
  }
});

Deno.test("unlinking the identity the address came from moves the address to a remaining one", async () => {
  const env = await serverWithFakes(["github", "google"]);
  try {
    const auth = client(env.srv.url, "implicit");
    env.fakes.github.user = defaultUser();
    const gh = await land(
      env.srv,
      await env.fakes.github.approve(
        await toProvider(env.srv, `${env.srv.url}/authorize?provider=github`),
      ),
    );
    await auth.setSession({
      access_token: gh.hash.get("access_token")!,
      refresh_token: gh.hash.get("refresh_token")!,
    });
    env.fakes.google.user = defaultUser();
    const link = await auth.linkIdentity({
      provider: "google",
      options: { skipBrowserRedirect: true },
    });
    const linked = await land(
      env.srv,
      await env.fakes.google.approve(await followLink(env.srv, link.data.url!)),
    );
    assert.equal(linked.hash.get("error"), null, linked.hash.get("error_description") ?? "");
    const ids = (await auth.getUserIdentities()).data!.identities;
    const github = ids.find((i) => i.provider === "github")!;
    assert.equal((await auth.unlinkIdentity(github)).error, null);
    await auth.refreshSession();
    const { data } = await auth.getUser();
    assert.equal(data.user?.email, env.fakes.google.user.email);
    assert.deepEqual(data.user?.app_metadata.providers, ["google"]);
    assert.equal(data.user?.app_metadata.provider, "google");
  } finally {
    await env.close();
  }
});

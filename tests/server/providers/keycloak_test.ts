/**
 * keycloak against a real OpenID provider: `oidc-provider` on 127.0.0.1
 * serving Keycloak's realm paths, end to end through /authorize (PKCE,
 * nonce), an interactive login and consent, and /callback (code exchange with
 * HTTP Basic, ID token verified against the realm's keys, userinfo).
 */
import assert from "node:assert/strict";
import { startOidcProvider } from "../../helpers/oidc_provider.ts";
import { startTestServer } from "../../helpers/server.ts";
import { getUser, type Json, land, REDIRECT_URI, redirectOf } from "./_helpers.ts";

const OIDC = "/protocol/openid-connect";

async function realm() {
  return await startOidcProvider({
    clients: [{
      client_id: "authsvc",
      client_secret: "realm-client-secret",
      redirect_uris: [REDIRECT_URI],
      grant_types: ["authorization_code", "refresh_token"],
    }],
    accounts: {
      alice: {
        email: "Alice@Example.test",
        email_verified: true,
        name: "Alice Liddell",
        department: "tea",
      },
      bob: { email: "bob@example.test", email_verified: false, name: "Bob" },
    },
    configuration: {
      routes: {
        authorization: `${OIDC}/auth`,
        token: `${OIDC}/token`,
        userinfo: `${OIDC}/userinfo`,
        jwks: `${OIDC}/certs`,
      },
    },
  });
}

function env(url: string): Record<string, string> {
  return {
    AUTHSVC_EXTERNAL_KEYCLOAK_ENABLED: "true",
    AUTHSVC_EXTERNAL_KEYCLOAK_CLIENT_ID: "authsvc",
    AUTHSVC_EXTERNAL_KEYCLOAK_SECRET: "realm-client-secret",
    AUTHSVC_EXTERNAL_KEYCLOAK_REDIRECT_URI: REDIRECT_URI,
    AUTHSVC_EXTERNAL_KEYCLOAK_URL: url,
  };
}

Deno.test("keycloak: sign-in against a real OpenID provider, ID token verified", async (t) => {
  const op = await realm();
  const srv = await startTestServer(env(`${op.issuer}/`)); // a trailing slash is fine
  try {
    await t.step("a verified realm user signs up and in", async () => {
      const to = await redirectOf(
        srv,
        "/authorize?provider=keycloak&redirect_to=http://localhost:3000/app",
      );
      assert.equal(to.origin + to.pathname, `${op.issuer}${OIDC}/auth`);
      assert.equal(to.searchParams.get("scope"), "openid profile email");
      assert.ok(to.searchParams.get("nonce"));
      assert.equal(to.searchParams.get("code_challenge_method"), "S256");
      const login = await op.login(to.href, { login: "alice" });
      const l = await land(srv, { url: login.callbackUrl, init: {} });
      assert.equal(l.hash.get("error"), null, l.hash.get("error_description") ?? "");
      assert.equal(l.location.origin + l.location.pathname, "http://localhost:3000/app");
      assert.equal(l.hash.get("provider"), "keycloak");
      assert.ok(l.hash.get("provider_refresh_token"));
      // The provider token is a real token of the realm.
      const res = await fetch(op.endpoints.resource, {
        headers: { authorization: `Bearer ${l.hash.get("provider_token")}` },
      });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).sub, "alice");

      const me = await getUser(srv, l.hash.get("access_token")!);
      assert.equal(me.body.email, "alice@example.test");
      assert.ok(me.body.email_confirmed_at);
      const id = (me.body.identities as Json[])[0];
      assert.equal(id.provider, "keycloak");
      assert.equal(id.id, "alice");
      const data = id.identity_data as Json;
      assert.equal(data.iss, op.issuer);
      assert.equal(data.full_name, "Alice Liddell");
      assert.equal(data.email_verified, true);
    });

    await t.step("a realm user with an unverified address gets no session", async () => {
      const to = await redirectOf(srv, "/authorize?provider=keycloak");
      const login = await op.login(to.href, { login: "bob" });
      const l = await land(srv, { url: login.callbackUrl, init: {} });
      assert.equal(l.hash.get("error"), "access_denied");
      assert.equal(l.hash.get("error_code"), "provider_email_needs_verification");
    });
  } finally {
    await srv.close();
    await op.close();
  }
});

Deno.test("keycloak: an ID token from another issuer than the configured realm is refused", async () => {
  const op = await realm();
  // The same realm under another host name: reachable, but its tokens say 127.0.0.1.
  const srv = await startTestServer(env(op.issuer.replace("127.0.0.1", "localhost")));
  try {
    const to = await redirectOf(srv, "/authorize?provider=keycloak");
    const login = await op.login(to.href, { login: "alice" });
    const l = await land(srv, { url: login.callbackUrl, init: {} });
    assert.equal(l.hash.get("access_token"), null);
    assert.equal(l.hash.get("error_code"), "oauth_provider_error");
    assert.match(l.hash.get("error_description") ?? "", /ID token rejected: .*iss/);
  } finally {
    await srv.close();
    await op.close();
  }
});

Deno.test("enabling a provider without its settings stops the start, naming them", async () => {
  const cases: [Record<string, string>, RegExp[]][] = [
    [{ AUTHSVC_EXTERNAL_GITHUB_ENABLED: "true" }, [
      /AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID/,
      /AUTHSVC_EXTERNAL_GITHUB_SECRET/,
      /AUTHSVC_EXTERNAL_GITHUB_REDIRECT_URI/,
    ]],
    [{
      AUTHSVC_EXTERNAL_KEYCLOAK_ENABLED: "true",
      AUTHSVC_EXTERNAL_KEYCLOAK_CLIENT_ID: "a",
      AUTHSVC_EXTERNAL_KEYCLOAK_SECRET: "b",
      AUTHSVC_EXTERNAL_KEYCLOAK_REDIRECT_URI: REDIRECT_URI,
    }, [/AUTHSVC_EXTERNAL_KEYCLOAK_URL/]],
    [{
      AUTHSVC_EXTERNAL_GOOGLE_ENABLED: "true",
      AUTHSVC_EXTERNAL_GOOGLE_CLIENT_ID: "a",
      AUTHSVC_EXTERNAL_GOOGLE_SECRET: "b",
      AUTHSVC_EXTERNAL_GOOGLE_REDIRECT_URI: "auth.example.com/callback",
    }, [/AUTHSVC_EXTERNAL_GOOGLE_REDIRECT_URI: expected an http\(s\) URL/]],
  ];
  for (const [over, expected] of cases) {
    await assert.rejects(startTestServer(over), (e: Error) => {
      for (const re of expected) assert.match(e.message, re);
      return true;
    });
  }
  // gitlab needs no URL: it defaults to gitlab.com.
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_GITLAB_ENABLED: "true",
    AUTHSVC_EXTERNAL_GITLAB_CLIENT_ID: "a",
    AUTHSVC_EXTERNAL_GITLAB_SECRET: "b",
    AUTHSVC_EXTERNAL_GITLAB_REDIRECT_URI: REDIRECT_URI,
  });
  try {
    const to = await redirectOf(srv, "/authorize?provider=gitlab");
    assert.equal(to.origin + to.pathname, "https://gitlab.com/oauth/authorize");
  } finally {
    await srv.close();
  }
});

/**
 * Attack with a provider's claims (issue 38, item 12): a NUL character or a
 * lone UTF-16 surrogate in any claim of an ID token (POST
 * /token?grant_type=id_token) or of a provider's answers (/callback).
 * PostgreSQL refuses both in jsonb (and NUL in text): the server answered
 * 500, or stored U+FFFD where the provider sent something else. Identifying
 * claims (sub, iss, e-mail) are refused; describing ones are cleaned.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startLocalIssuer } from "../../helpers/id_token_issuer.ts";
import { defaultUser, getUser, serverWithFakes, signIn } from "../providers/_helpers.ts";

async function idTokenGrant(srv: TestServer, provider: string, idToken: string) {
  const res = await srv.fetch("/token?grant_type=id_token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ provider, id_token: idToken }),
  });
  return { status: res.status, body: await res.json() };
}

async function userCount(srv: TestServer): Promise<number> {
  const res = await srv.fetch("/admin/users?per_page=1", {
    headers: { authorization: `Bearer ${await srv.serviceRoleToken()}` },
  });
  await res.body?.cancel();
  return Number(res.headers.get("x-total-count"));
}

const HOSTILE = ["\u0000", "\ud800", "\udfff", "a\u0000b", "x\ud83d"];

Deno.test("NUL and lone surrogates in an ID token's claims (grant_type=id_token)", async () => {
  const iss = await startLocalIssuer();
  // Google maps the claims it knows; Keycloak keeps the others as custom claims.
  const providers = { google: iss.url, keycloak: `${iss.url}/realms/demo` };
  const env: Record<string, string> = {};
  for (const [p, url] of Object.entries(providers)) {
    const X = `AUTHSVC_EXTERNAL_${p.toUpperCase()}`;
    Object.assign(env, {
      [`${X}_ENABLED`]: "true",
      [`${X}_CLIENT_ID`]: "app-client",
      [`${X}_SECRET`]: "unused",
      [`${X}_REDIRECT_URI`]: "http://localhost:8081/callback",
      [`${X}_URL`]: url,
    });
  }
  const srv = await startTestServer(env);
  try {
    const now = Math.floor(Date.now() / 1000);
    const claims = (issuer: string, extra: Record<string, unknown>) => ({
      iss: issuer,
      sub: `sub-${crypto.randomUUID()}`,
      aud: "app-client",
      iat: now,
      exp: now + 600,
      email: `c-${crypto.randomUUID().slice(0, 8)}@example.com`,
      email_verified: true,
      ...extra,
    });
    const before = await userCount(srv);
    // Identifying claims: refused with a 400 naming the claim, nothing stored.
    for (const [provider, issuer] of Object.entries(providers)) {
      for (const bad of HOSTILE) {
        for (
          const [claim, value] of [
            ["sub", `sub-${bad}-${crypto.randomUUID()}`],
            ["email", `x${bad}y-${crypto.randomUUID().slice(0, 6)}@example.com`],
          ]
        ) {
          const token = await iss.sign(claims(issuer, { [claim]: value }));
          const r = await idTokenGrant(srv, provider, token);
          const what = `${provider} ${claim} ${JSON.stringify(bad)}: ${JSON.stringify(r.body)}`;
          assert.equal(r.status, 400, what);
          assert.equal(r.body.error_code, "validation_failed");
          assert.match(r.body.msg, claim === "sub" ? /user id \(sub\)/ : /e-mail address/);
        }
      }
    }
    // Found by the fuzz (tests/fuzz/claims.ts): controls and bidi marks in an address.
    for (const bad of ["\u202e", "\u0007", "\u200b", "\t"]) {
      const address = `x${bad}y-${crypto.randomUUID().slice(0, 6)}@example.com`;
      const r = await idTokenGrant(
        srv,
        "keycloak",
        await iss.sign(claims(providers.keycloak, { email: address })),
      );
      assert.equal(r.status, 400, `email ${JSON.stringify(bad)}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.msg, /control or format character/);
    }
    assert.equal(await userCount(srv), before, "no user was created");
    // An address in another form than the canonical one is stored canonical (NFC, lower case).
    const nfd = `Jose\u0301-${crypto.randomUUID().slice(0, 6)}@Example.org`;
    const canonical = await idTokenGrant(
      srv,
      "google",
      await iss.sign(claims(providers.google, { email: nfd })),
    );
    assert.equal(canonical.status, 200, JSON.stringify(canonical.body));
    assert.equal(canonical.body.user.email, nfd.normalize("NFC").toLowerCase());

    // Describing claims: cleaned, the person signs in.
    for (const [provider, issuer] of Object.entries(providers)) {
      const r = await idTokenGrant(
        srv,
        provider,
        await iss.sign(claims(issuer, {
          name: "Ada\u0000 Love\ud800lace",
          picture: "https://img.example/\udfff.png",
          "hd\u0000": "example\ud800.com",
          nested: { ["k\ud800"]: ["v\u0000", { deep: "\udc00" }] },
        })),
      );
      assert.equal(r.status, 200, `${provider}: ${JSON.stringify(r.body)}`);
      const me = await getUser(srv, r.body.access_token);
      assert.equal(me.status, 200, JSON.stringify(me.body));
      const meta = me.body.user_metadata as Record<string, unknown>;
      assert.equal(meta.full_name, "Ada Love\ufffdlace", provider);
      assert.equal(meta.avatar_url, "https://img.example/\ufffd.png", provider);
      if (provider === "keycloak") {
        const [identity] = me.body.identities as { identity_data: Record<string, unknown> }[];
        assert.deepEqual(identity.identity_data.custom_claims, {
          hd: "example\ufffd.com",
          nested: { "k\ufffd": ["v", { deep: "\ufffd" }] },
        });
      }
    }
  } finally {
    await srv.close();
    await iss.close();
  }
});

Deno.test("NUL and lone surrogates in a provider's answers (/callback)", async () => {
  const { srv, fakes, close } = await serverWithFakes(["google", "github"]);
  try {
    for (const name of ["google", "github"]) {
      const fake = fakes[name];
      const before = await userCount(srv);
      for (const bad of HOSTILE) {
        // GitHub's user id is a number in its API: only its addresses carry text.
        const ids = name === "google" ? [{ id: `7${bad}7` }] : [];
        for (const over of [...ids, { email: `x${bad}@example.org` }]) {
          fake.user = defaultUser(over);
          const landing = await signIn(srv, fake);
          assert.equal(landing.status, 302, `${name} ${JSON.stringify(over)}`);
          assert.equal(landing.query.get("error_code"), "oauth_provider_error");
          assert.match(landing.query.get("error_description") ?? "", /user id|e-mail address/);
        }
      }
      assert.equal(await userCount(srv), before, `${name}: no user was created`);

      fake.user = defaultUser({ name: "Grace\u0000 Hop\ud800per" });
      const landing = await signIn(srv, fake);
      const token = landing.hash.get("access_token");
      assert.ok(token, `${name}: ${landing.location.href}`);
      const me = await getUser(srv, token);
      assert.equal(me.status, 200);
      const meta = me.body.user_metadata as Record<string, unknown>;
      assert.equal(meta.full_name, "Grace Hop\ufffdper", name);
    }
  } finally {
    await close();
  }
});

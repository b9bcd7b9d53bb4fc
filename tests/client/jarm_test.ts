/**
 * JWT-secured authorization responses (JARM) against oidc-provider with
 * `jwtResponseModes` on: `response_mode=jwt` (query for the code flow),
 * `query.jwt` and `fragment.jwt`, each verified by
 * `validateAuthorizationResponse` (signature against the provider's JWKS,
 * `iss`, `aud`, `exp`, `state`); a tampered or foreign response, and a
 * plain one where JARM was asked for, are refused.
 */
import assert from "node:assert/strict";
import { Client, generatePkce, OAuthError } from "../../mod.ts";
import { validateAuthorizationResponse } from "../../oidc.ts";
import { driveLogin } from "../helpers/oidc_provider.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";

const REDIRECT = "http://127.0.0.1:9/callback";
const SECRET = "jarm-secret-8c1e0b7d2f";

/** Logs in and returns the redirect to the callback as the browser would load it (a JARM response has no code to stop at). */
async function callbackOf(authorizeUrl: string): Promise<string> {
  let seen: string | undefined;
  const browser: typeof fetch = (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.startsWith(REDIRECT)) {
      seen = url;
      return Promise.resolve(new Response("the application's callback page"));
    }
    return fetch(input, init);
  };
  await driveLogin(authorizeUrl, { fetch: browser, redirectUri: "http://never.invalid/" })
    .catch(() => {/* the callback page has no form: the login is over */});
  if (!seen) throw new Error("the provider never redirected to the callback");
  return seen;
}

async function setup() {
  const op = await startOidcProvider({
    clients: [{
      client_id: "jarm-app",
      client_secret: SECRET,
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code"],
      authorization_signed_response_alg: "RS256",
    }],
    configuration: {
      features: {
        devInteractions: { enabled: true },
        jwtResponseModes: { enabled: true },
      },
    },
  });
  const client = await Client.discover(op.issuer, "jarm-app", SECRET, { redirectUri: REDIRECT });
  return { op, client };
}

for (const mode of ["jwt", "query.jwt", "fragment.jwt"]) {
  Deno.test(`JARM response_mode=${mode}: verified, then the code is exchanged`, async () => {
    const { op, client } = await setup();
    try {
      const pkce = await generatePkce();
      const state = crypto.randomUUID();
      const url = client.authCode.authorizeUrl({
        scope: "openid",
        state,
        response_mode: mode,
        code_challenge: pkce.codeChallenge,
        code_challenge_method: "S256",
      });
      const callback = new URL(await callbackOf(url));
      const where = mode === "fragment.jwt"
        ? new URLSearchParams(callback.hash.slice(1))
        : callback.searchParams;
      assert.deepEqual([...where.keys()], ["response"], "only the signed response travels");
      const res = await validateAuthorizationResponse(client, callback, { state, jarm: true });
      assert.equal(res.iss, op.issuer);
      assert.equal(res.state, state);
      const token = await client.authCode.getToken(res.code, { code_verifier: pkce.codeVerifier });
      assert.ok(token.token);
    } finally {
      client.close();
      await op.close();
    }
  });
}

Deno.test("JARM: tampered, foreign and plain responses are refused", async (t) => {
  const { op, client } = await setup();
  try {
    const pkce = await generatePkce();
    const state = crypto.randomUUID();
    const callback = new URL(
      await callbackOf(client.authCode.authorizeUrl({
        scope: "openid",
        state,
        response_mode: "query.jwt",
        code_challenge: pkce.codeChallenge,
        code_challenge_method: "S256",
      })),
    );
    const jwt = callback.searchParams.get("response")!;
    const refused = (pattern: RegExp) => (e: unknown) => {
      assert.ok(e instanceof OAuthError);
      assert.equal(e.code, "invalid_authorization_response");
      assert.match(e.description!, pattern);
      return true;
    };
    await t.step("a changed payload does not verify", async () => {
      const [h, p, s] = jwt.split(".");
      const claims = JSON.parse(atob(p.replace(/-/g, "+").replace(/_/g, "/")));
      claims.code = "attacker-code";
      const forged = btoa(JSON.stringify(claims)).replace(/\+/g, "-").replace(/\//g, "_").replace(
        /=+$/,
        "",
      );
      await assert.rejects(
        validateAuthorizationResponse(
          client,
          new URLSearchParams({ response: `${h}.${forged}.${s}` }),
          { state },
        ),
        refused(/signature does not verify/),
      );
    });
    await t.step("a response for another client (aud) is refused", async () => {
      const other = await Client.discover(op.issuer, "someone-else", "x", {
        redirectUri: REDIRECT,
      });
      await assert.rejects(
        validateAuthorizationResponse(other, callback, { state }),
        refused(/aud "jarm-app" is not someone-else/),
      );
      other.close();
    });
    await t.step("a plain response where JARM was asked for is refused", async () => {
      await assert.rejects(
        validateAuthorizationResponse(
          client,
          new URLSearchParams({ code: "c", state, iss: op.issuer }),
          { state, jarm: true },
        ),
        refused(/not a JARM response/),
      );
    });
    await t.step("the genuine one passes", async () => {
      assert.ok(
        (await validateAuthorizationResponse(client, callback, { state, jarm: true })).code,
      );
    });
  } finally {
    client.close();
    await op.close();
  }
});

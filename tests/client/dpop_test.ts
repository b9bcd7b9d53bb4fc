/** DPoP (RFC 9449) against oidc-provider, which requires a server nonce here. */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { AccessToken, Client, generatePkce, OAuthError } from "../../mod.ts";
import { createDpop, introspect, userinfo } from "../../oidc.ts";
import { startOidcProvider } from "../helpers/oidc_provider.ts";

const REDIRECT = "http://127.0.0.1:9/callback";
const SECRET = "web-secret-5f2a9c0d8e7b";

Deno.test("DPoP: bound tokens, proofs with ath, nonce retry, refresh, refused without proof", async () => {
  await using op = await startOidcProvider({
    clients: [{
      client_id: "web",
      client_secret: SECRET,
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
    }],
    configuration: {
      features: {
        devInteractions: { enabled: true },
        introspection: { enabled: true },
        userinfo: { enabled: true },
        revocation: { enabled: true },
        dPoP: {
          enabled: true,
          nonceSecret: Buffer.from(crypto.getRandomValues(new Uint8Array(32))),
          requireNonce: () => true,
        },
      },
    },
  });
  const dpop = await createDpop();
  const seen: { path: string; status: number; auth: string | null; proof: string | null }[] = [];
  const client = await Client.discover(op.issuer, "web", SECRET, {
    redirectUri: REDIRECT,
    connectionBuild: (b) => {
      // inner: records each request as the DPoP middleware sends it (retries too)
      b.use(dpop.middleware);
      b.use(async (req, next) => {
        const res = await next(req);
        seen.push({
          path: new URL(req.url).pathname,
          status: res.status,
          auth: req.headers.get("authorization"),
          proof: req.headers.get("dpop"),
        });
        return res;
      });
    },
  });
  const pkce = await generatePkce();
  const url = client.authCode.authorizeUrl({
    scope: "openid email offline_access",
    prompt: "consent",
    code_challenge: pkce.codeChallenge,
    code_challenge_method: "S256",
  });
  const { code } = await op.login(url, { login: "dora" });
  const token = await client.authCode.getToken(code, { code_verifier: pkce.codeVerifier });
  assert.equal(token.params.token_type, "DPoP");

  // the first token request was refused for want of a nonce, then retried with it
  const tokenCalls = seen.filter((s) => s.path === "/token");
  assert.equal(tokenCalls.length, 2);
  assert.equal(tokenCalls[0].status, 400);
  assert.equal(tokenCalls[1].status, 200);
  const proof = JSON.parse(
    atob(tokenCalls[1].proof!.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
  );
  assert.equal(proof.htm, "POST");
  assert.equal(proof.htu, op.endpoints.token);
  assert.equal(typeof proof.nonce, "string");

  // the token is bound to our key
  const info = await introspect(client, token.token);
  assert.equal((info.cnf as { jkt: string }).jkt, dpop.thumbprint);

  // a request with the token: Authorization: DPoP, a proof with ath
  const me = await userinfo(token);
  assert.equal(me.sub, "dora");
  const call = seen.filter((s) => s.path === "/me").at(-1)!;
  assert.equal(call.auth, `DPoP ${token.token}`);
  const p2 = JSON.parse(atob(call.proof!.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  assert.equal(typeof p2.ath, "string");
  assert.equal(p2.htm, "GET");

  // refresh keeps working with proofs; the new token is bound too
  const refreshed = await token.refresh();
  assert.equal(refreshed.params.token_type, "DPoP");
  assert.equal((await userinfo(refreshed)).sub, "dora");

  // the same token without a proof (a client without the key) is refused
  const plain = new Client("web", SECRET, { site: op.issuer });
  const stolen = new AccessToken(plain, refreshed.token);
  await assert.rejects(stolen.get(op.endpoints.userinfo), (e: unknown) => {
    assert.ok(e instanceof OAuthError);
    assert.equal(e.response.status, 401);
    return true;
  });
});

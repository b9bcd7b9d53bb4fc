/**
 * Facebook Login: the `email` scope (public_profile is implied), client id
 * and secret in the token request, the user from the Graph API
 * `GET /me?fields=id,name,email,first_name,last_name,picture` with
 * `appsecret_proof` (HMAC-SHA256 of the token keyed by the app secret). The
 * Graph API answers `email` only for a confirmed address.
 * Docs: developers.facebook.com/docs/facebook-login/guides/advanced/manual-flow,
 * .../graph-api/securing-requests
 */
import { hmacHex, hmacKey } from "../util/crypto.ts";
import { getJson, obj, str } from "./http.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

function appsecretProof(secret: string, token: string): string {
  return hmacHex(hmacKey(secret), token);
}

export const facebook: ProviderSpec = {
  name: "facebook",
  endpoints(url) {
    const graph = chooseBase(url, "https://graph.facebook.com");
    return {
      authorize: `${chooseBase(url, "https://www.facebook.com")}/dialog/oauth`,
      token: `${graph}/oauth/access_token`,
      api: graph,
    };
  },
  scopes: ["email"],
  authScheme: "request_body",
  pkce: false,
  nativeIdToken: {
    // Limited Login (developers.facebook.com/docs/facebook-login/limited-login/token/validating):
    // its own issuer and key set; the nonce is put in as given, so GoTrue skips it; the tokens
    // carry only addresses Facebook has confirmed.
    rules(url) {
      const base = chooseBase(url, "");
      return base ? { jwksUri: `${base}/.well-known/oauth/openid/jwks/`, issuer: base } : {
        jwksUri: "https://limited.facebook.com/.well-known/oauth/openid/jwks/",
        issuer: "https://www.facebook.com",
      };
    },
    hashedNonce: false,
    user: { claims: { emailVerified: true } },
  },
  async fetchUser(ctx) {
    const u = await getJson(ctx, `${ctx.endpoints.api}/me`, {
      params: {
        fields: "id,name,email,first_name,last_name,picture",
        appsecret_proof: appsecretProof(ctx.settings.secret, ctx.token.token),
      },
    });
    const email = str(u.email);
    const full = [str(u.first_name), str(u.last_name)].filter(Boolean).join(" ");
    return {
      id: String(u.id ?? ""),
      issuer: ctx.endpoints.api,
      emails: email ? [{ email, verified: true, primary: true }] : [],
      name: full || str(u.name),
      avatarUrl: str(obj(obj(u.picture).data).url),
      userName: str(u.name),
    };
  },
};

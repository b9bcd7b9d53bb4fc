/**
 * Sign In with LinkedIn using OpenID Connect: `openid profile email`, client
 * id and secret in the token request, the user from the verified ID token
 * (keys at `https://www.linkedin.com/oauth/openid/jwks`, issuer
 * `https://www.linkedin.com/oauth`) with `email_verified` as LinkedIn reports
 * it (a boolean, or a string in older answers). LinkedIn does not support the
 * `nonce` parameter (its ID tokens never carry one), so none is sent or checked.
 * Docs: learn.microsoft.com/linkedin/consumer/integrations/self-serve/sign-in-with-linkedin-v2
 */
import { getJson } from "./http.ts";
import { userFromClaims } from "./oidc_claims.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const linkedin: ProviderSpec = {
  name: "linkedin",
  endpoints(url) {
    const www = chooseBase(url, "https://www.linkedin.com");
    return {
      authorize: `${www}/oauth/v2/authorization`,
      token: `${www}/oauth/v2/accessToken`,
      api: `${chooseBase(url, "https://api.linkedin.com")}/v2/userinfo`,
      // LinkedIn ignores `nonce` and puts none in its ID tokens; the single-use state
      // and the direct code exchange stand in for it.
      idToken: { jwksUri: `${www}/oauth/openid/jwks`, issuer: `${www}/oauth`, nonce: false },
    };
  },
  scopes: ["openid", "profile", "email"],
  authScheme: "request_body",
  pkce: false,
  async fetchUser(ctx) {
    const claims = ctx.idClaims ?? await getJson<Record<string, unknown>>(ctx, ctx.endpoints.api);
    return userFromClaims(claims, "https://www.linkedin.com/oauth");
  },
};

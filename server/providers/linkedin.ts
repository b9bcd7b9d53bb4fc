/**
 * Sign In with LinkedIn using OpenID Connect: `openid profile email`, client
 * id and secret in the token request, the user from the verified ID token
 * (keys at `https://www.linkedin.com/oauth/openid/jwks`, issuer
 * `https://www.linkedin.com/oauth`) with `email_verified` as LinkedIn reports
 * it (a boolean, or a string in older answers).
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
      idToken: { jwksUri: `${www}/oauth/openid/jwks`, issuer: `${www}/oauth` },
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

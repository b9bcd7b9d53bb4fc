/**
 * Google (OpenID Connect): `openid email profile`, PKCE, client id and secret
 * in the token request, the user from the verified ID token (keys at
 * `https://www.googleapis.com/oauth2/v3/certs`, issuer
 * `https://accounts.google.com`), `email_verified` as Google reports it, and
 * the hosted domain (`hd`) of Workspace accounts kept as a custom claim. The
 * userinfo endpoint is read only if Google sent no ID token.
 * Docs: developers.google.com/identity/openid-connect/openid-connect
 */
import { getJson, str } from "./http.ts";
import { userFromClaims } from "./oidc_claims.ts";
import { chooseBase, type ProviderSpec } from "./types.ts";

export const google: ProviderSpec = {
  name: "google",
  endpoints(url) {
    const accounts = chooseBase(url, "https://accounts.google.com");
    return {
      authorize: `${accounts}/o/oauth2/v2/auth`,
      token: `${chooseBase(url, "https://oauth2.googleapis.com")}/token`,
      api: `${chooseBase(url, "https://openidconnect.googleapis.com")}/v1/userinfo`,
      idToken: {
        jwksUri: `${chooseBase(url, "https://www.googleapis.com")}/oauth2/v3/certs`,
        issuer: url
          ? accounts
          : (iss) => iss === "https://accounts.google.com" || iss === "accounts.google.com",
      },
    };
  },
  scopes: ["openid", "email", "profile"],
  authScheme: "request_body",
  pkce: true,
  idTokenOptional: true,
  nativeIdToken: { hashedNonce: true, user: "spec" },
  async fetchUser(ctx) {
    const claims = ctx.idClaims ?? await getJson<Record<string, unknown>>(ctx, ctx.endpoints.api);
    const user = userFromClaims(claims, "https://accounts.google.com");
    const hd = str(claims.hd);
    if (hd) user.customClaims = { hd };
    return user;
  },
};

/**
 * Keycloak (OpenID Connect) on the realm URL in EXTERNAL_KEYCLOAK_URL
 * (required): `openid profile email`, PKCE, HTTP Basic client
 * authentication, the ID token verified against the realm's keys
 * (`/protocol/openid-connect/certs`, issuer = realm URL), then the claims from
 * the userinfo endpoint, whose `sub` must be the ID token's. Claims beyond the
 * standard ones are kept as custom claims.
 * Docs: keycloak.org/docs/latest/securing_apps (OIDC endpoints)
 */
import { getJson } from "./http.ts";
import { userFromClaims } from "./oidc_claims.ts";
import { chooseBase, ProviderError, type ProviderSpec } from "./types.ts";

const STANDARD = new Set([
  "sub",
  "name",
  "email",
  "email_verified",
  "picture",
  "preferred_username",
]);

export const keycloak: ProviderSpec = {
  name: "keycloak",
  endpoints(url) {
    const realm = chooseBase(url, "");
    const oidc = `${realm}/protocol/openid-connect`;
    return {
      authorize: `${oidc}/auth`,
      token: `${oidc}/token`,
      api: `${oidc}/userinfo`,
      idToken: { jwksUri: `${oidc}/certs`, issuer: realm },
    };
  },
  scopes: ["openid", "profile", "email"],
  authScheme: "basic_auth",
  pkce: true,
  urlSetting: { required: true, doc: "realm URL (required when enabled)" },
  nativeIdToken: { hashedNonce: true, user: { claims: {} } },
  async fetchUser(ctx) {
    const info = await getJson(ctx, ctx.endpoints.api);
    if (ctx.idClaims && info.sub !== ctx.idClaims.sub) {
      throw new ProviderError("keycloak userinfo is about another subject than the ID token");
    }
    const user = userFromClaims({ ...info, iss: ctx.idClaims?.iss }, ctx.endpoints.api);
    const custom: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(info)) if (!STANDARD.has(k)) custom[k] = v;
    if (Object.keys(custom).length) user.customClaims = custom;
    return user;
  },
};

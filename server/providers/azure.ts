/**
 * Microsoft Entra ID (Azure AD) v2.0 endpoints, OpenID Connect. The base is
 * `https://login.microsoftonline.com/common` (multi-tenant) or a tenant's URL
 * in EXTERNAL_AZURE_URL. The ID token's issuer is tenant-specific
 * (`<origin>/<tid>/v2.0`), so it is checked against the token's `tid` and,
 * for a single-tenant base, against that tenant. Microsoft does not verify
 * the `email` claim (anyone can set it on an account of their own tenant), so
 * it counts as verified only when the `xms_edov` optional claim (e-mail domain
 * owner verified) is true: configure that claim in the app registration.
 * GoTrue also trusts an absent `xms_edov`; we do not (account takeover by a
 * forged address, "nOAuth").
 * Docs: learn.microsoft.com/entra/identity-platform/v2-oauth2-auth-code-flow
 */
import { chooseBase, ProviderError, type ProviderSpec } from "./types.ts";
import { str, truthy } from "./http.ts";

const MULTI = new Set(["common", "organizations", "consumers"]);
const DROP = new Set([
  "aud",
  "iss",
  "iat",
  "nbf",
  "exp",
  "c_hash",
  "at_hash",
  "aio",
  "nonce",
  "rh",
  "uti",
  "jti",
  "ver",
  "sub",
  "name",
  "preferred_username",
  "email",
]);

export const azure: ProviderSpec = {
  name: "azure",
  endpoints(url) {
    const base = chooseBase(url, "https://login.microsoftonline.com/common");
    const u = new URL(base);
    const tenant = u.pathname.split("/").filter(Boolean)[0] ?? "common";
    return {
      authorize: `${base}/oauth2/v2.0/authorize`,
      token: `${base}/oauth2/v2.0/token`,
      api: base,
      idToken: {
        jwksUri: `${base}/discovery/v2.0/keys`,
        issuer: (iss, claims) => {
          const tid = str(claims.tid);
          if (!tid || (!MULTI.has(tenant) && tid !== tenant)) return false;
          return iss === `${u.origin}/${tid}/v2.0`;
        },
      },
    };
  },
  scopes: ["openid", "email", "profile"],
  authScheme: "request_body",
  pkce: true,
  nativeIdToken: { hashedNonce: true, user: "spec" },
  fetchUser({ idClaims }) {
    if (!idClaims) return Promise.reject(new ProviderError("azure sent no ID token"));
    const email = str(idClaims.email);
    const edov = idClaims.xms_edov;
    const verified = !!email && edov !== undefined && truthy(edov);
    const custom: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(idClaims)) if (!DROP.has(k)) custom[k] = v;
    return Promise.resolve({
      id: String(idClaims.sub),
      issuer: String(idClaims.iss),
      emails: email ? [{ email, verified, primary: true }] : [],
      name: str(idClaims.name),
      userName: str(idClaims.preferred_username),
      customClaims: custom,
    });
  },
};

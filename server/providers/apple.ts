/**
 * Sign in with Apple (OpenID Connect). The authorization request asks for
 * `name email` with `response_mode=form_post`, so Apple POSTs the code to
 * `/callback`; the user's name arrives once, in the posted `user` JSON.
 * The client secret is the ES256 JWT Apple asks for (EXTERNAL_APPLE_SECRET),
 * sent in the request body. Identity and e-mail come from the verified ID
 * token (`https://appleid.apple.com/auth/keys`, issuer `https://appleid.apple.com`
 * or `https://account.apple.com`); Apple reports only addresses
 * it verified, private relay addresses included (`is_private_email`).
 * Docs: developer.apple.com/documentation/sign_in_with_apple/sign_in_with_apple_rest_api
 */
import { chooseBase, ProviderError, type ProviderSpec } from "./types.ts";
import { obj, str, truthy } from "./http.ts";

/** The issuers of Apple's ID tokens (GoTrue accepts both since 2025). */
const APPLE_ISSUERS = ["https://appleid.apple.com", "https://account.apple.com"];

export const apple: ProviderSpec = {
  name: "apple",
  endpoints(url) {
    const base = chooseBase(url, "https://appleid.apple.com");
    return {
      authorize: `${base}/auth/authorize`,
      token: `${base}/auth/token`,
      api: base,
      idToken: {
        jwksUri: `${base}/auth/keys`,
        // Apple has begun to sign with `https://account.apple.com` as the issuer, unannounced.
        issuer: url ? base : (iss) => APPLE_ISSUERS.includes(iss),
      },
    };
  },
  scopes: ["name", "email"],
  authScheme: "request_body",
  pkce: false,
  authorizeParams: { response_mode: "form_post" },
  nativeIdToken: { hashedNonce: true, user: "spec" },
  fetchUser({ idClaims, endpoints, callback }) {
    if (!idClaims) return Promise.reject(new ProviderError("apple sent no ID token"));
    const email = str(idClaims.email);
    // Apple's ID token says email_verified "true" (a string) for every address it hands out.
    const verified = idClaims.email_verified === undefined ? true : truthy(idClaims.email_verified);
    let name: string | undefined;
    const posted = callback.get("user");
    if (posted) {
      try {
        const n = obj(obj(JSON.parse(posted)).name);
        name = [str(n.firstName), str(n.lastName)].filter(Boolean).join(" ") || undefined;
      } catch { /* a malformed user field only loses the name */ }
    }
    const custom: Record<string, unknown> = {};
    if (idClaims.is_private_email !== undefined) {
      custom.is_private_email = truthy(idClaims.is_private_email);
    }
    return Promise.resolve({
      id: String(idClaims.sub),
      issuer: str(idClaims.iss) ?? endpoints.api,
      emails: email ? [{ email, verified, primary: true }] : [],
      name,
      customClaims: Object.keys(custom).length ? custom : undefined,
    });
  },
};

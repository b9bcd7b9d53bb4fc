/**
 * OpenID Connect and recent OAuth extensions for `@authsvc/oauth2`, as a
 * separate entry point so that the core stays small: ID token validation
 * on WebCrypto ({@linkcode idTokenVerifier}, {@linkcode validateIdToken}),
 * {@linkcode userinfo}, token {@linkcode introspect}ion (RFC 7662) and
 * pushed authorization requests ({@linkcode pushAuthorizationRequest},
 * RFC 9126). Discovery is `Client.discover` in the core.
 *
 * @example Authorization code with an ID token
 * ```ts ignore
 * import { Client, generatePkce } from "@authsvc/oauth2";
 * import { idTokenVerifier, userinfo } from "@authsvc/oauth2/oidc";
 *
 * const client = await Client.discover("https://id.example.com", "app", "secret", {
 *   redirectUri: "https://app.example.com/cb",
 *   verifyToken: idTokenVerifier(),
 * });
 * const pkce = await generatePkce();
 * const nonce = crypto.randomUUID();
 * const url = client.authCode.authorizeUrl({ scope: "openid email", nonce,
 *   code_challenge: pkce.codeChallenge, code_challenge_method: "S256" });
 * // ... the user comes back with ?code=
 * const token = await client.authCode.getToken(code, { code_verifier: pkce.codeVerifier, idToken: { nonce } });
 * console.log(token.idTokenClaims?.sub, await userinfo(token));
 * ```
 *
 * @module
 */
export { type IdTokenOptions, idTokenVerifier, validateIdToken } from "./client/oidc/id_token.ts";
export {
  introspect,
  type Introspection,
  pushAuthorizationRequest,
  type PushOptions,
  userinfo,
} from "./client/oidc/endpoints.ts";
export {
  type AuthorizationResponse,
  type AuthorizationResponseChecks,
  validateAuthorizationResponse,
} from "./client/oidc/authorization_response.ts";
export { authorizationUrlWithRequestObject, requestObject } from "./client/oidc/jar.ts";
export { createDpop, type Dpop, type DpopOptions } from "./client/oidc/dpop.ts";
export {
  DEVICE_CODE_GRANT,
  type DeviceAuthorization,
  pollDeviceToken,
  type PollOptions,
  startDeviceAuthorization,
} from "./client/oidc/device.ts";

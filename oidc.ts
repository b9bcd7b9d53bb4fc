/**
 * OpenID Connect and recent OAuth extensions for `@authsvc/oauth2`, as a
 * separate entry point so that the core stays small: ID token validation
 * on WebCrypto ({@linkcode idTokenVerifier}, {@linkcode validateIdToken}),
 * the authorization response with RFC 9207 `iss` and JARM
 * ({@linkcode validateAuthorizationResponse}), {@linkcode userinfo}, token
 * {@linkcode introspect}ion (RFC 7662), pushed authorization requests
 * ({@linkcode pushAuthorizationRequest}, RFC 9126) and signed request
 * objects (RFC 9101), DPoP (RFC 9449), the device grant (RFC 8628), CIBA
 * poll mode, token exchange ({@linkcode exchangeToken}, RFC 8693),
 * protected resource metadata (RFC 9728) and, for resource servers,
 * {@linkcode jwtAccessTokenVerifier} (RFC 9068). Discovery is
 * `Client.discover` in the core; `profile: "fapi2"` there keeps the FAPI
 * 2.0 Security Profile.
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
export {
  type BackchannelAuthentication,
  CIBA_GRANT,
  pollBackchannelToken,
  startBackchannelAuthentication,
} from "./client/oidc/ciba.ts";
export {
  exchangeToken,
  TOKEN_EXCHANGE_GRANT,
  type TokenExchangeRequest,
} from "./client/oidc/token_exchange.ts";
export {
  discoverProtectedResource,
  type ProtectedResourceMetadata,
  type ProtectedResourceOptions,
  resourceMetadataUrl,
} from "./client/oidc/protected_resource.ts";
export {
  type JwtAccessTokenClaims,
  type JwtAccessTokenOptions,
  jwtAccessTokenVerifier,
  type VerifyAccessToken,
} from "./client/oidc/resource_server.ts";
export { createDpop, type Dpop, type DpopOptions } from "./client/oidc/dpop.ts";
export {
  DEVICE_CODE_GRANT,
  type DeviceAuthorization,
  pollDeviceToken,
  type PollOptions,
  startDeviceAuthorization,
} from "./client/oidc/device.ts";

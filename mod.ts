/**
 * An OAuth 2.0 client (OAuth 2.1 and OpenID Connect usage) on web standards
 * only: it runs unchanged in Deno, Node 20+ and browsers.
 *
 * - {@linkcode Client}: endpoints, client authentication (`basic_auth`,
 *   `request_body`, `private_key_jwt`, `tls_client_auth`), raw requests;
 *   {@linkcode BaseClient}, its base class, for the smallest bundle: token
 *   requests answered with the token response itself;
 * - grant strategies: `client.authCode` (with {@linkcode generatePkce}),
 *   `client.implicit`, `client.password`, `client.clientCredentials`,
 *   `client.assertion`, and `client.getToken` for any grant;
 * - {@linkcode AccessToken}: expiry, refresh, revocation, requests with the token;
 * - {@linkcode OAuthResponse}, {@linkcode OAuthError}, {@linkcode SnakyHash},
 *   {@linkcode Serializer}, {@linkcode configure}.
 *
 * @example Client credentials
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 *
 * const client = new Client("my-id", "my-secret", { site: "https://auth.example.com" });
 * const token = await client.clientCredentials.getToken({ scope: "api:read" });
 * const res = await token.get("https://api.example.com/things");
 * console.log(res.parsed);
 * ```
 *
 * @module
 */
export { Client, type ResolvedClientOptions } from "./client/client.ts";
export { BaseClient, type TokenResponse } from "./client/base_client.ts";
export type {
  AuthScheme,
  ClientOptions,
  RequestOptions,
  TokenMethod,
  TokenParams,
  Verb,
  VerifyTokenContext,
} from "./client/options.ts";
export type { ConnectionBuilder, ConnectionOptions, Middleware } from "./client/connection.ts";
export type { Logger } from "./client/logger.ts";
export {
  AccessToken,
  type AccessTokenOptions,
  type TokenMode,
  type TokenPlacement,
  type TokenTransmission,
} from "./client/access_token.ts";
import { OAuthResponse } from "./client/response.ts";
export {
  OAuthResponse,
  type Parsed,
  type ParseMode,
  type ParseOption,
  type Parser,
  type ResponseOptions,
} from "./client/response.ts";
export {
  ConnectionError,
  type ConnectionErrorKind,
  OAuthError,
  type OAuthErrorDetails,
} from "./client/error.ts";
export { snakeCase, SnakyHash } from "./client/snaky_hash.ts";
export { type HashHook, Serializer, type ValueHook } from "./client/serializer.ts";
export { config, configure, type OAuth2Config } from "./client/config.ts";
export { redact } from "./client/redact.ts";
export { generatePkce, type Pkce } from "./client/pkce.ts";
export { type Jwk, type SigningKeyInput, SUPPORTED_ALGORITHMS } from "./client/signing_keys.ts";
export {
  AuthCode,
  type AuthCodeTokenParams,
  type AuthorizeParams,
} from "./client/strategy/auth_code.ts";
export { Implicit } from "./client/strategy/implicit.ts";
export { Password } from "./client/strategy/password.ts";
export { ClientCredentials } from "./client/strategy/client_credentials.ts";
export {
  Assertion,
  type AssertionEncoding,
  JWT_BEARER_GRANT,
} from "./client/strategy/assertion.ts";

/**
 * `OAuthResponse` under the Ruby gem's name (`OAuth2::Response`), as a type.
 *
 * @example
 * ```ts
 * import { Client, type Response } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const load = (): Promise<Response> => client.request("get", "/items");
 * console.log(typeof load);
 * ```
 */
export type Response = OAuthResponse;
/**
 * `OAuthResponse` under the Ruby gem's name (`OAuth2::Response`), as a value.
 *
 * @example
 * ```ts
 * import { Response as OAuth2Response } from "@authsvc/oauth2";
 * const res = await OAuth2Response.from(globalThis.Response.json({ a: 1 }));
 * console.log(res.status); // 200
 * ```
 */
export const Response: typeof OAuthResponse = OAuthResponse;

/**
 * Library version.
 *
 * @example
 * ```ts
 * import { VERSION } from "@authsvc/oauth2";
 * console.log(`oauth2 client ${VERSION}`);
 * ```
 */
export const VERSION = "0.1.0";

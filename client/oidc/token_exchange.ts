/**
 * OAuth 2.0 Token Exchange (RFC 8693): trade a token the client holds (the
 * subject's, and an actor's for delegation) for another one, for another
 * audience or resource.
 * @module
 */
import type { AccessToken, AccessTokenOptions } from "../access_token.ts";
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";

/**
 * The grant type of RFC 8693 §2.1.
 *
 * @example
 * ```ts ignore
 * import { TOKEN_EXCHANGE_GRANT } from "@authsvc/oauth2/oidc";
 * console.log(TOKEN_EXCHANGE_GRANT); // "urn:ietf:params:oauth:grant-type:token-exchange"
 * ```
 */
export const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";

/**
 * What {@linkcode exchangeToken} sends (RFC 8693 §2.1), in camelCase.
 *
 * @example
 * ```ts ignore
 * import { exchangeToken, type TokenExchangeRequest } from "@authsvc/oauth2/oidc";
 * const request: TokenExchangeRequest = {
 *   subjectToken: incoming, subjectTokenType: "urn:ietf:params:oauth:token-type:access_token",
 *   audience: "https://backend.example.com",
 * };
 * const token = await exchangeToken(client, request);
 * ```
 */
export interface TokenExchangeRequest {
  /** The token that represents the party on whose behalf the request is made. */
  subjectToken: string;
  /** Its type: `urn:ietf:params:oauth:token-type:access_token`, `...:id_token`, `...:jwt` ... */
  subjectTokenType: string;
  /** The acting party's token (delegation). */
  actorToken?: string;
  /** Its type; required with `actorToken`. */
  actorTokenType?: string;
  /** The type of token wanted. */
  requestedTokenType?: string;
  /** Where the token will be used: URIs (repeated `resource`). */
  resource?: string | string[];
  /** Logical names of the target services (repeated `audience`). */
  audience?: string | string[];
  /** Space-separated scopes. */
  scope?: string;
  /** Other wire parameters, and the library's keys of `getToken` (`headers` ...). */
  extra?: Record<string, unknown>;
}

/**
 * Exchanges a token (RFC 8693 §2) at the token endpoint with the client's
 * authentication. The response must name the `issued_token_type` (§2.2.1);
 * it is kept in `token.params.issued_token_type`. A response with a
 * `token_type` of `N_A` (the issued token is not an access token) is
 * returned as it is.
 *
 * @throws {TypeError} for a missing subject token or an actor token without its type
 * @throws {OAuthError} when the provider refuses, or `invalid_token_response`
 *   without `issued_token_type`
 *
 * @example
 * ```ts ignore
 * import { exchangeToken } from "@authsvc/oauth2/oidc";
 * const downstream = await exchangeToken(client, {
 *   subjectToken: userAccessToken,
 *   subjectTokenType: "urn:ietf:params:oauth:token-type:access_token",
 *   resource: "https://orders.internal.example.com",
 *   scope: "orders:read",
 * });
 * await downstream.get("https://orders.internal.example.com/v1/orders");
 * ```
 */
export async function exchangeToken(
  client: Client,
  request: TokenExchangeRequest,
  accessTokenOpts?: AccessTokenOptions,
): Promise<AccessToken> {
  if (typeof request?.subjectToken !== "string" || !request.subjectToken) {
    throw new TypeError(`exchangeToken: "subjectToken" must be a non-empty string`);
  }
  if (typeof request.subjectTokenType !== "string" || !request.subjectTokenType) {
    throw new TypeError(`exchangeToken: "subjectTokenType" must be a non-empty string`);
  }
  if (request.actorToken !== undefined && !request.actorTokenType) {
    throw new TypeError(`exchangeToken: "actorTokenType" is required with "actorToken"`);
  }
  const token = await client.getToken({
    ...request.extra,
    grant_type: TOKEN_EXCHANGE_GRANT,
    subject_token: request.subjectToken,
    subject_token_type: request.subjectTokenType,
    actor_token: request.actorToken,
    actor_token_type: request.actorTokenType,
    requested_token_type: request.requestedTokenType,
    resource: request.resource,
    audience: request.audience,
    scope: request.scope,
  }, accessTokenOpts);
  if (typeof token.params.issued_token_type !== "string") {
    throw new OAuthError(token.response!, {
      code: "invalid_token_response",
      description: "the token exchange response has no issued_token_type (RFC 8693 §2.2.1)",
      secrets: [token.token, token.refreshToken, request.subjectToken, request.actorToken],
    });
  }
  return token;
}

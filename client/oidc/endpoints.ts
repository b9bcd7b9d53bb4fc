/**
 * OpenID Connect and OAuth endpoints beyond the token endpoint: UserInfo,
 * token introspection (RFC 7662) and pushed authorization requests
 * (RFC 9126).
 * @module
 */
import type { AccessToken } from "../access_token.ts";
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";
import type { TokenParams } from "../options.ts";
import type { OAuthResponse } from "../response.ts";
import { configuredUrl, postAuthenticated } from "./post.ts";
import { authorizationParams, requestObject } from "./jar.ts";

/**
 * The UserInfo claims for `token` (a GET with the token). When the token
 * carries validated `idTokenClaims`, the UserInfo `sub` must equal the ID
 * token's (OpenID Connect Core §5.3.4).
 *
 * @throws {OAuthError} when the provider refuses, or `invalid_userinfo` for another `sub`
 *
 * @example
 * ```ts ignore
 * import { userinfo } from "@authsvc/oauth2/oidc";
 * const claims = await userinfo(token);
 * console.log(claims.email);
 * ```
 */
export async function userinfo(token: AccessToken): Promise<Record<string, unknown>> {
  const res = await token.get(configuredUrl(token.client, "userinfoUrl"), {
    headers: { accept: "application/json" },
  });
  const claims = res.parsedHash;
  if (!claims || typeof claims.sub !== "string") {
    throw new OAuthError(res, {
      code: "invalid_userinfo",
      description: "the UserInfo response is not a JSON object with a sub",
    });
  }
  const expected = token.idTokenClaims?.sub;
  if (expected !== undefined && claims.sub !== expected) {
    throw new OAuthError(res, {
      code: "invalid_userinfo",
      description: `the UserInfo sub ${claims.sub} is not the ID token's`,
    });
  }
  return claims;
}

/**
 * What RFC 7662 §2.2 answers: `active`, and for an active token its details.
 *
 * @example
 * ```ts ignore
 * import { introspect, type Introspection } from "@authsvc/oauth2/oidc";
 * const info: Introspection = await introspect(client, token.token, "access_token");
 * if (info.active) console.log(info.scope, info.exp);
 * ```
 */
export interface Introspection {
  /** Whether the token is active. */
  active: boolean;
  /** Space-separated scopes. */
  scope?: string;
  /** The client the token was issued to. */
  client_id?: string;
  /** The resource owner. */
  sub?: string;
  /** Expiry, epoch seconds. */
  exp?: number;
  /** `access_token`, `refresh_token` ... as the provider says. */
  token_type?: string;
  /** Any other member. */
  [member: string]: unknown;
}

/**
 * Introspects a token at `introspectionUrl` with the client's authentication
 * (RFC 7662).
 *
 * @throws {OAuthError} when the provider refuses (e.g. `invalid_client`)
 *
 * @example
 * ```ts ignore
 * import { introspect } from "@authsvc/oauth2/oidc";
 * const info = await introspect(client, token.token, "access_token");
 * if (!info.active) console.log("revoked or expired");
 * ```
 */
export async function introspect(
  client: Client,
  token: string,
  tokenTypeHint?: "access_token" | "refresh_token",
  params: Record<string, unknown> = {},
): Promise<Introspection> {
  if (typeof token !== "string" || token === "") {
    throw new TypeError(`introspect: "token" must be a non-empty string`);
  }
  const wire: TokenParams = { ...params, token };
  if (tokenTypeHint) wire.token_type_hint = tokenTypeHint;
  const res = await postAuthenticated(client, configuredUrl(client, "introspectionUrl"), wire, [
    token,
  ]);
  const body = res.parsedHash;
  if (!body || typeof body.active !== "boolean") {
    throw new OAuthError(res, {
      code: "invalid_introspection",
      description: "the introspection response has no boolean active",
      secrets: [token],
    });
  }
  return body as Introspection;
}

/**
 * Pushes the authorization request (RFC 9126) and returns the URL to send
 * the user to: the authorization endpoint with only `client_id` and the
 * `request_uri` the provider gave. `params` are those of
 * `client.authCode.authorizeUrl` (`redirect_uri` defaults to the client's
 * `redirectUri`; `response_type` to `code`); with `options.requestObject`
 * they travel as a signed request object (RFC 9101). Under the FAPI 2.0
 * profile, PKCE with S256 and `response_type=code` are required.
 *
 * @throws {OAuthError} when the provider refuses the request
 * @throws {TypeError} for `client_secret` in `params`, or a request FAPI 2.0 forbids
 *
 * @example
 * ```ts ignore
 * import { generatePkce } from "@authsvc/oauth2";
 * import { pushAuthorizationRequest } from "@authsvc/oauth2/oidc";
 * const pkce = await generatePkce();
 * const { url } = await pushAuthorizationRequest(client, {
 *   scope: "openid", state, code_challenge: pkce.codeChallenge, code_challenge_method: "S256",
 * });
 * // redirect the user to url
 * ```
 */
export async function pushAuthorizationRequest(
  client: Client,
  params: Record<string, unknown> = {},
  options: PushOptions = {},
): Promise<{ url: string; requestUri: string; expiresIn?: number; response: OAuthResponse }> {
  const request = authorizationParams(client, params);
  if (client.options.profile === "fapi2") {
    if (request.code_challenge_method !== "S256" || typeof request.code_challenge !== "string") {
      throw new TypeError(`FAPI 2.0 needs PKCE with code_challenge_method S256`);
    }
    if (request.response_type !== "code") {
      throw new TypeError(`FAPI 2.0 allows only response_type code`);
    }
  }
  const wire: TokenParams = options.requestObject
    ? { client_id: client.id, request: await requestObject(client, request) }
    : request;
  const res = await postAuthenticated(client, configuredUrl(client, "parUrl"), wire);
  const body = res.parsedHash;
  if (res.status >= 400 || typeof body?.request_uri !== "string") {
    throw res.error ?? new OAuthError(
      res,
      body?.error ? {} : {
        code: "invalid_par_response",
        description: "the pushed authorization response has no request_uri",
      },
    );
  }
  const url = new URL(client.authorizeUrl());
  url.search = new URLSearchParams({ client_id: client.id, request_uri: body.request_uri })
    .toString();
  return {
    url: url.href,
    requestUri: body.request_uri,
    expiresIn: typeof body.expires_in === "number" ? body.expires_in : undefined,
    response: res,
  };
}

/**
 * Options of {@linkcode pushAuthorizationRequest}.
 *
 * @example
 * ```ts ignore
 * import { pushAuthorizationRequest, type PushOptions } from "@authsvc/oauth2/oidc";
 * const options: PushOptions = { requestObject: true };
 * const { url } = await pushAuthorizationRequest(client, { scope: "openid" }, options);
 * ```
 */
export interface PushOptions {
  /** Push the parameters as a signed request object (RFC 9101) rather than as form fields. */
  requestObject?: boolean;
}

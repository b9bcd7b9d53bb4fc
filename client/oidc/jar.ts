/**
 * JWT-secured authorization requests (RFC 9101): the request's parameters
 * in a request object signed with the client's key, sent by value
 * (`request=`) or inside a pushed authorization request.
 * @module
 */
import type { Client } from "../client.ts";
import { randomJti, signJwt } from "../jwt.ts";
import { clientKeyHeader, clientSigningAlg, clientSigningKey } from "../token_request.ts";

/** Seconds a request object is valid (FAPI: `exp` at most 60 minutes after `nbf`). */
const REQUEST_OBJECT_LIFETIME = 300;

/**
 * Signs `params` as a request object (RFC 9101 §4) with the client's
 * `clientAssertionKey` (and `clientAssertionAlg`): `iss` and `client_id` the
 * client, `aud` the issuer, `iat`, `nbf`, `exp` five minutes later, a fresh
 * `jti`; header `typ: oauth-authz-req+jwt`.
 *
 * @throws {TypeError} when the client has no key or no issuer
 *
 * @example
 * ```ts ignore
 * import { requestObject } from "@authsvc/oauth2/oidc";
 * const jwt = await requestObject(client, { response_type: "code", scope: "openid", state });
 * ```
 */
export async function requestObject(
  client: Client,
  params: Record<string, unknown>,
): Promise<string> {
  const issuer = client.options.issuer;
  if (!issuer) throw new TypeError(`the client has no "issuer" (the request object's aud)`);
  const alg = clientSigningAlg(client);
  const key = await clientSigningKey(client, alg);
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) claims[k] = v;
  Object.assign(claims, {
    iss: client.id,
    aud: issuer,
    client_id: client.id,
    iat: now,
    nbf: now,
    exp: now + REQUEST_OBJECT_LIFETIME,
    jti: randomJti(),
  });
  return await signJwt(claims, key, alg, {
    ...clientKeyHeader(client),
    typ: "oauth-authz-req+jwt",
  });
}

/**
 * The authorization URL carrying the request as a signed request object by
 * value (RFC 9101 §5.1): `client_id` and `request` only. `params` are those
 * of `client.authCode.authorizeUrl` (`response_type` defaults to `code`,
 * `redirect_uri` to the client's).
 *
 * @throws {TypeError} under the FAPI 2.0 profile, which sends requests by PAR
 *
 * @example
 * ```ts ignore
 * import { authorizationUrlWithRequestObject } from "@authsvc/oauth2/oidc";
 * const url = await authorizationUrlWithRequestObject(client, { scope: "openid", state, nonce });
 * ```
 */
export async function authorizationUrlWithRequestObject(
  client: Client,
  params: Record<string, unknown> = {},
): Promise<string> {
  if (client.options.profile === "fapi2") {
    throw new TypeError(`FAPI 2.0 sends authorization requests only by PAR`);
  }
  const jwt = await requestObject(client, authorizationParams(client, params));
  const url = new URL(client.authorizeUrl());
  url.search = new URLSearchParams({ client_id: client.id, request: jwt }).toString();
  return url.href;
}

/** The parameters of an authorization request with the defaults of the code flow. */
export function authorizationParams(
  client: Client,
  params: Record<string, unknown>,
): Record<string, unknown> {
  if ("client_secret" in params) {
    throw new TypeError(`client_secret is not an authorization parameter`);
  }
  const out: Record<string, unknown> = { response_type: "code", client_id: client.id, ...params };
  if (out.redirect_uri === undefined && client.options.redirectUri) {
    out.redirect_uri = client.options.redirectUri;
  }
  return out;
}

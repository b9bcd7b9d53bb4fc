/**
 * The authorization response, read on the redirect URI before the code is
 * used: the issuer (RFC 9207, the defence against mix-up attacks), the
 * `state`, a JARM response (a JWT the provider signed, `response_mode=jwt`,
 * `query.jwt`, `fragment.jwt`), then an error or the code.
 * @module
 */
import type { Client } from "../client.ts";
import { OAuthError } from "../error.ts";
import { OAuthResponse } from "../response.ts";
import { verifyProviderJws } from "./provider_jws.ts";

/**
 * What {@linkcode validateAuthorizationResponse} checks the response against.
 *
 * @example
 * ```ts ignore
 * import { type AuthorizationResponseChecks, validateAuthorizationResponse } from "@authsvc/oauth2/oidc";
 * const checks: AuthorizationResponseChecks = { state: saved.state, jarm: true };
 * await validateAuthorizationResponse(client, callbackUrl, checks);
 * ```
 */
export interface AuthorizationResponseChecks {
  /** The `state` sent on the authorization request; a response with another (or none) is refused. */
  state?: string;
  /** Require a JARM response (the request had `response_mode=jwt` or `*.jwt`). */
  jarm?: boolean;
  /** Seconds of clock difference tolerated on a JARM response's `exp`; default 60. */
  clockSkew?: number;
}

/**
 * A validated authorization response.
 *
 * @example
 * ```ts ignore
 * import { type AuthorizationResponse, validateAuthorizationResponse } from "@authsvc/oauth2/oidc";
 * const res: AuthorizationResponse = await validateAuthorizationResponse(client, callbackUrl, { state });
 * console.log(res.code, res.iss);
 * ```
 */
export interface AuthorizationResponse {
  /** The authorization code. */
  code: string;
  /** The `state`, when there was one. */
  state?: string;
  /** The issuer that sent the response, when it said. */
  iss?: string;
  /** Every parameter of the response (of the JWT's claims for JARM). */
  params: URLSearchParams;
}

/** The parameters of a redirect: its query, or its fragment when the query has none. */
function paramsOf(input: string | URL | URLSearchParams): URLSearchParams {
  if (input instanceof URLSearchParams) return input;
  const url = new URL(input);
  if (url.searchParams.size > 0 || url.hash.length <= 1) return url.searchParams;
  return new URLSearchParams(url.hash.slice(1));
}

function refuse(params: URLSearchParams, description: string): OAuthError {
  return authorizationError(params, { code: "invalid_authorization_response", description });
}

function authorizationError(
  params: URLSearchParams,
  details: { code?: string; description?: string },
): OAuthError {
  const body = JSON.stringify(Object.fromEntries(params));
  const response = new OAuthResponse(
    new Response(body, { status: 400, headers: { "content-type": "application/json" } }),
    body,
  );
  return new OAuthError(response, { ...details, secrets: [params.get("code") ?? undefined] });
}

/** The claims of a JARM response as parameters, after its signature, `iss`, `aud` and `exp`. */
async function jarmParams(
  client: Client,
  outer: URLSearchParams,
  jwt: string,
  skew: number,
): Promise<URLSearchParams> {
  const { claims } = await verifyProviderJws(
    client,
    jwt,
    "JARM response",
    undefined,
    (reason) => refuse(outer, reason),
  );
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(claims)) {
    if (k === "aud" || k === "exp" || k === "iat") continue;
    params.set(k, typeof v === "string" ? v : JSON.stringify(v));
  }
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(client.id)) {
    throw refuse(
      params,
      `the JARM response's aud ${JSON.stringify(claims.aud)} is not ${client.id}`,
    );
  }
  if (typeof claims.exp !== "number" || claims.exp + skew <= Date.now() / 1000) {
    throw refuse(params, `the JARM response expired (exp ${claims.exp})`);
  }
  if (typeof claims.iss !== "string") throw refuse(params, "the JARM response has no iss");
  return params;
}

/**
 * Validates the authorization response of `client`'s provider (the redirect
 * URL, or its parameters) and returns the code:
 *
 * 1. a JARM response (`response=<JWT>`) is verified against the provider's
 *    JWKS (`aud` the client id, `exp`) and its claims are the parameters;
 *    with `checks.jarm` a response without one is refused;
 * 2. `iss` must equal the client's `issuer` (RFC 9207); a response without
 *    `iss` is refused when the provider's metadata announces
 *    `authorization_response_iss_parameter_supported`, or under the FAPI 2.0
 *    profile;
 * 3. `state` must equal `checks.state`;
 * 4. an `error` is thrown as an `OAuthError` with the provider's code;
 * 5. otherwise the `code` is returned.
 *
 * Steps 1-3 fail with an `OAuthError` `invalid_authorization_response`
 * naming the check, before anything is sent anywhere.
 *
 * @example
 * ```ts ignore
 * import { validateAuthorizationResponse } from "@authsvc/oauth2/oidc";
 * // on https://app.example.com/callback?code=...&state=...&iss=...
 * const { code } = await validateAuthorizationResponse(client, request.url, { state: saved.state });
 * const token = await client.authCode.getToken(code, { code_verifier: saved.verifier });
 * ```
 */
export async function validateAuthorizationResponse(
  client: Client,
  input: string | URL | URLSearchParams,
  checks: AuthorizationResponseChecks = {},
): Promise<AuthorizationResponse> {
  let params = paramsOf(input);
  const jwt = params.get("response");
  if (jwt !== null) {
    params = await jarmParams(client, params, jwt, checks.clockSkew ?? 60);
  } else if (checks.jarm) {
    throw refuse(params, "the response is not a JARM response (no response parameter)");
  }
  const issuer = client.options.issuer;
  const iss = params.get("iss");
  if (iss !== null) {
    if (!issuer) throw new TypeError(`the client has no "issuer" to check the response's iss`);
    if (iss !== issuer) {
      throw refuse(params, `iss ${JSON.stringify(iss)} is not ${issuer} (a mix-up attack?)`);
    }
  } else if (
    client.options.profile === "fapi2" ||
    client.options.metadata?.authorization_response_iss_parameter_supported === true
  ) {
    throw refuse(params, `the response has no iss, which ${issuer} always sends (RFC 9207)`);
  }
  const state = params.get("state");
  if (state !== (checks.state ?? null)) {
    throw refuse(
      params,
      checks.state === undefined
        ? "the response has a state, but none was expected"
        : `state ${JSON.stringify(state)} is not the one sent`,
    );
  }
  const error = params.get("error");
  if (error !== null) {
    throw authorizationError(params, {
      code: error,
      description: params.get("error_description") ?? undefined,
    });
  }
  const code = params.get("code");
  if (!code) throw refuse(params, "the response has neither a code nor an error");
  return { code, ...(state !== null ? { state } : {}), ...(iss !== null ? { iss } : {}), params };
}

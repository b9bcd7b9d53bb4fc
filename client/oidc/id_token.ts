/**
 * ID token validation (OpenID Connect Core §3.1.3.7) on WebCrypto only: the
 * signature against the provider's JWKS (cached per JWKS URL, fetched again
 * when a token names an unknown key: key rotation), `iss`, `aud`, `azp`,
 * `exp`/`iat` with clock skew, `nonce`, `auth_time` with `max_age`, and
 * `at_hash`/`c_hash`.
 * @module
 */
import type { AccessToken } from "../access_token.ts";
import type { Client } from "../client.ts";
import { base64url, utf8 } from "../encoding.ts";
import { OAuthError } from "../error.ts";
import { verifyProviderJws } from "./provider_jws.ts";
import type { VerifyTokenContext } from "../options.ts";
import { OAuthResponse } from "../response.ts";

/**
 * Options of {@linkcode validateIdToken} and {@linkcode idTokenVerifier}.
 *
 * @example
 * ```ts ignore
 * import { idTokenVerifier, type IdTokenOptions } from "@authsvc/oauth2/oidc";
 * const options: IdTokenOptions = { required: true, clockSkew: 30 };
 * const verifyToken = idTokenVerifier(options);
 * ```
 */
export interface IdTokenOptions {
  /** The `nonce` sent on the authorization request (then required in the token). */
  nonce?: string;
  /** `max_age` sent on the authorization request (then `auth_time` is required and checked). */
  maxAge?: number;
  /** Seconds of clock difference tolerated on `exp`, `iat` and `auth_time`; default 60. */
  clockSkew?: number;
  /** The access token issued with the ID token (checks `at_hash` when present). */
  accessToken?: string;
  /** The authorization code of a hybrid flow (checks `c_hash` when present). */
  code?: string;
  /**
   * Accepted `alg` values; default RS/PS/ES256-512, EdDSA and HS256-512
   * (client secret), and only PS256, ES256 and EdDSA under `profile: "fapi2"`.
   */
  algorithms?: string[];
  /** Require an `id_token` in every token response (verifier only); default false. */
  required?: boolean;
}

/** Why an ID token was refused: an `OAuthError` with code `invalid_id_token`. */
function invalid(response: OAuthResponse | undefined, description: string): OAuthError {
  return new OAuthError(response ?? synthetic(), { code: "invalid_id_token", description });
}

/** A stand-in response for an ID token validated outside a token request. */
function synthetic(): OAuthResponse {
  return new OAuthResponse(new Response(""), "");
}

/** The left half of the hash of `value` (at_hash / c_hash), base64url. */
async function halfHash(value: string, alg: string): Promise<string> {
  const bits = alg === "EdDSA" ? "512" : alg.slice(2);
  const digest = new Uint8Array(await crypto.subtle.digest(`SHA-${bits}`, utf8(value)));
  return base64url(digest.subarray(0, digest.length / 2));
}

/**
 * Validates an ID token for `client` and returns its claims.
 *
 * @param client the client (its `id`, `issuer`, `jwksUri`; `secret` for HS*)
 * @param idToken the compact JWS
 * @param options nonce, max age, clock skew, the access token and code to bind
 * @param response the token response, attached to the error
 * @throws {OAuthError} with code `invalid_id_token` naming what failed
 *
 * @example
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 * import { validateIdToken } from "@authsvc/oauth2/oidc";
 * const client = await Client.discover("https://id.example.com", "app", "secret");
 * const claims = await validateIdToken(client, idToken, { nonce });
 * console.log(claims.sub);
 * ```
 */
export async function validateIdToken(
  client: Client,
  idToken: string,
  options: IdTokenOptions = {},
  response?: OAuthResponse,
): Promise<Record<string, unknown>> {
  if (typeof idToken !== "string") {
    throw new TypeError(`validateIdToken: "idToken" must be a string`);
  }
  const { claims, alg } = await verifyProviderJws(
    client,
    idToken,
    "ID token",
    options.algorithms,
    (reason) => invalid(response, reason),
  );

  const issuer = client.options.issuer;
  if (!issuer) throw invalid(response, `the client has no "issuer" to check the ID token against`);
  if (claims.iss !== issuer) {
    throw invalid(response, `iss ${JSON.stringify(claims.iss)} is not ${issuer}`);
  }
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(client.id)) {
    throw invalid(response, `aud ${JSON.stringify(claims.aud)} does not hold ${client.id}`);
  }
  if ((aud.length > 1 || claims.azp !== undefined) && claims.azp !== client.id) {
    throw invalid(response, `azp ${JSON.stringify(claims.azp)} is not ${client.id}`);
  }
  const now = Math.floor(Date.now() / 1000);
  const skew = options.clockSkew ?? 60;
  if (typeof claims.exp !== "number" || claims.exp + skew <= now) {
    throw invalid(response, `the ID token expired (exp ${claims.exp})`);
  }
  if (typeof claims.iat !== "number" || claims.iat - skew > now) {
    throw invalid(response, `iat ${claims.iat} is missing or in the future`);
  }
  if (options.nonce !== undefined && claims.nonce !== options.nonce) {
    throw invalid(response, `nonce ${JSON.stringify(claims.nonce)} is not the one sent`);
  }
  if (options.maxAge !== undefined) {
    if (typeof claims.auth_time !== "number") throw invalid(response, "auth_time is missing");
    if (claims.auth_time + options.maxAge + skew < now) {
      throw invalid(response, `the authentication is older than max_age ${options.maxAge}`);
    }
  }
  for (const [claim, value] of [["at_hash", options.accessToken], ["c_hash", options.code]]) {
    if (claims[claim!] !== undefined && value) {
      if (claims[claim!] !== await halfHash(value, alg)) {
        throw invalid(response, `${claim} does not match`);
      }
    }
  }
  return claims;
}

/**
 * A `ClientOptions.verifyToken` that validates the `id_token` of every token
 * response (nonce and max age from the token call's `idToken` parameter,
 * `at_hash` against the access token) and sets `token.idTokenClaims`.
 *
 * @example
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 * import { idTokenVerifier } from "@authsvc/oauth2/oidc";
 * const client = await Client.discover("https://id.example.com", "app", "secret", {
 *   redirectUri: "https://app.example.com/cb",
 *   verifyToken: idTokenVerifier(),
 * });
 * const token = await client.authCode.getToken(code, { code_verifier, idToken: { nonce } });
 * console.log(token.idTokenClaims?.sub);
 * ```
 */
export function idTokenVerifier(
  defaults: IdTokenOptions = {},
): (token: AccessToken, context: VerifyTokenContext) => Promise<void> {
  return async (token, { client, params, response }) => {
    const idToken = token.params.id_token;
    if (typeof idToken !== "string") {
      if (defaults.required) throw invalid(response, "the token response has no id_token");
      return;
    }
    const expected = params.idToken ?? {};
    token.idTokenClaims = await validateIdToken(client, idToken, {
      ...defaults,
      ...expected,
      accessToken: token.token || undefined,
    }, response);
  };
}

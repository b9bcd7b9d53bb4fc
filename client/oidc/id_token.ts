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
import { base64url, fromBase64, utf8 } from "../encoding.ts";
import { OAuthError } from "../error.ts";
import { algSpec } from "../jwt.ts";
import type { VerifyTokenContext } from "../options.ts";
import { OAuthResponse } from "../response.ts";

/** Options of {@linkcode validateIdToken} and {@linkcode idTokenVerifier}. */
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
  /** Accepted `alg` values; default RS/PS/ES256-512, EdDSA and HS256-512 (client secret). */
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

const DEFAULT_ALGS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "EdDSA",
  "HS256",
  "HS384",
  "HS512",
];

interface JwksEntry {
  keys: (JsonWebKey & { kid?: string; alg?: string; use?: string })[];
  loading?: Promise<void>;
}
const jwksCache = new Map<string, JwksEntry>();

async function loadJwks(client: Client, url: string, entry: JwksEntry): Promise<void> {
  entry.loading ??= client.request("get", url, { headers: { accept: "application/json" } })
    .then((res) => {
      const keys = res.parsedHash?.keys;
      if (!Array.isArray(keys)) throw invalid(res, `the JWKS at ${url} has no "keys"`);
      entry.keys = keys;
    }).finally(() => {
      entry.loading = undefined;
    });
  await entry.loading;
}

/** The verification key for a token header: from the cached JWKS, or fetched again for a new kid. */
async function keyFor(
  client: Client,
  header: { alg: string; kid?: string },
  response?: OAuthResponse,
): Promise<CryptoKey> {
  const spec = algSpec(header.alg);
  if (header.alg.startsWith("HS")) {
    return await crypto.subtle.importKey("raw", utf8(client.secret), spec.importParams, false, [
      "verify",
    ]);
  }
  const url = client.options.jwksUri;
  if (!url) throw invalid(response, `no "jwksUri" to verify an ${header.alg} ID token`);
  let entry = jwksCache.get(url);
  let fetched = false;
  if (!entry) {
    entry = { keys: [] };
    jwksCache.set(url, entry);
    await loadJwks(client, url, entry);
    fetched = true;
  }
  const kty = header.alg.startsWith("E") ? (header.alg === "EdDSA" ? "OKP" : "EC") : "RSA";
  const pick = () =>
    entry!.keys.filter((k) =>
      k.kty === kty && (header.kid === undefined || k.kid === header.kid) &&
      (k.use === undefined || k.use === "sig") && (k.alg === undefined || k.alg === header.alg)
    );
  let candidates = pick();
  if (candidates.length === 0 && !fetched) {
    await loadJwks(client, url, entry); // key rotation: the provider has a new key
    candidates = pick();
  }
  if (candidates.length !== 1) {
    throw invalid(
      response,
      candidates.length === 0
        ? `no key in the JWKS matches kid ${JSON.stringify(header.kid)} and ${header.alg}`
        : `several keys in the JWKS match an ID token without kid`,
    );
  }
  const { alg: _a, use: _u, key_ops: _k, ...jwk } = candidates[0] as JsonWebKey;
  return await crypto.subtle.importKey("jwk", jwk, spec.importParams, false, ["verify"]);
}

function decodePart(part: string): Record<string, unknown> {
  const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
  const parsed = JSON.parse(new TextDecoder().decode(fromBase64(b64)));
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error("not an object");
  }
  return parsed;
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
  const parts = idToken.split(".");
  if (parts.length !== 3) throw invalid(response, "the ID token is not a compact JWS");
  let header: Record<string, unknown>;
  let claims: Record<string, unknown>;
  try {
    header = decodePart(parts[0]);
    claims = decodePart(parts[1]);
  } catch {
    throw invalid(response, "the ID token's header or payload is not JSON");
  }
  const alg = header.alg;
  if (typeof alg !== "string" || !(options.algorithms ?? DEFAULT_ALGS).includes(alg)) {
    throw invalid(response, `the ID token's alg ${JSON.stringify(alg)} is not accepted`);
  }
  const kid = typeof header.kid === "string" ? header.kid : undefined;
  const key = await keyFor(client, { alg, kid }, response);
  const signature = fromBase64(parts[2].replace(/-/g, "+").replace(/_/g, "/"));
  const ok = await crypto.subtle.verify(
    algSpec(alg).signParams,
    key,
    signature,
    utf8(`${parts[0]}.${parts[1]}`),
  );
  if (!ok) throw invalid(response, "the ID token's signature does not verify");

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

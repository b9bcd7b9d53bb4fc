/**
 * For resource servers: validating the JWT access tokens an authorization
 * server issues (RFC 9068 §4) with its JWKS, fetched once and kept (and
 * fetched again when a token names an unknown key), and the DPoP proof of
 * a DPoP-bound token (RFC 9449 §4.3, §7).
 * @module
 */
import { base64url, utf8 } from "../encoding.ts";
import { OAuthError } from "../error.ts";
import { OAuthResponse } from "../response.ts";
import { ASYMMETRIC_ALGORITHMS, checkAlg, decodeJws, keyFromJwks, verifySignature } from "./jws.ts";
import { algSpec } from "../jwt.ts";

/**
 * Options of {@linkcode jwtAccessTokenVerifier}.
 *
 * @example
 * ```ts ignore
 * import { jwtAccessTokenVerifier, type JwtAccessTokenOptions } from "@authsvc/oauth2/oidc";
 * const options: JwtAccessTokenOptions = { issuer: "https://id.example.com", audience: "https://api.example.com" };
 * const verify = jwtAccessTokenVerifier(options);
 * ```
 */
export interface JwtAccessTokenOptions {
  /** The authorization server's issuer identifier (`iss` must equal it). */
  issuer: string;
  /** This resource's identifier(s): `aud` must hold one. */
  audience: string | string[];
  /** The issuer's JWKS; default the `jwks_uri` of its metadata (RFC 8414, else OpenID discovery). */
  jwksUri?: string;
  /** Accepted algorithms; default RS/PS/ES256-512 and EdDSA (never `none` or HS*). */
  algorithms?: string[];
  /** Seconds of clock difference tolerated on `exp`, `nbf`, `iat` and DPoP proofs; default 60. */
  clockSkew?: number;
  /** The fetch for the metadata and the JWKS; default `globalThis.fetch`. */
  fetch?: typeof fetch;
}

/**
 * The claims of a valid JWT access token (RFC 9068 §2.2).
 *
 * @example
 * ```ts ignore
 * import type { JwtAccessTokenClaims } from "@authsvc/oauth2/oidc";
 * const allowed = (claims: JwtAccessTokenClaims) => claims.scope?.split(" ").includes("orders:read");
 * ```
 */
export interface JwtAccessTokenClaims {
  /** The issuer. */
  iss: string;
  /** The resource owner, or the client for a client credentials token. */
  sub: string;
  /** The resource(s) the token is for. */
  aud: string | string[];
  /** Expiry, epoch seconds. */
  exp: number;
  /** Issued at, epoch seconds. */
  iat: number;
  /** The token's unique id. */
  jti: string;
  /** The client the token was issued to. */
  client_id: string;
  /** Space-separated scopes. */
  scope?: string;
  /** Confirmation: `jkt` (DPoP) or `x5t#S256` (mTLS) of a bound token. */
  cnf?: { jkt?: string; "x5t#S256"?: string };
  /** Any other claim. */
  [claim: string]: unknown;
}

/**
 * A function that validates the access token of a request (its
 * `Authorization: Bearer` or `DPoP` header, and the `DPoP` proof) or a
 * token string, and returns its claims.
 *
 * @example
 * ```ts ignore
 * import type { VerifyAccessToken } from "@authsvc/oauth2/oidc";
 * const handler = (verify: VerifyAccessToken) => async (req: Request) => Response.json(await verify(req));
 * ```
 */
export type VerifyAccessToken = (input: Request | string) => Promise<JwtAccessTokenClaims>;

/** RFC 6750 §3: the 401 a resource answers, as an OAuthError with a ready `response.response`. */
function invalidToken(description: string, scheme = "Bearer"): OAuthError {
  const body = JSON.stringify({ error: "invalid_token", error_description: description });
  const quoted = description.replace(/["\\]/g, "'");
  const response = new Response(body, {
    status: 401,
    headers: {
      "content-type": "application/json",
      "www-authenticate": `${scheme} error="invalid_token", error_description="${quoted}"`,
    },
  });
  return new OAuthError(new OAuthResponse(response, body));
}

const REQUIRED = ["iss", "exp", "aud", "sub", "client_id", "iat", "jti"] as const;

/**
 * Builds a validator of JWT access tokens for this resource (RFC 9068 §4):
 * `typ` `at+jwt`, the signature with a key of the issuer's JWKS, `iss`,
 * `aud` holding one of `audience`, `exp`/`nbf`/`iat` with clock skew, and
 * the required claims (`sub`, `client_id`, `jti` ...). Given a `Request`, it
 * reads the token from `Authorization`; a DPoP-bound token (`cnf.jkt`) must
 * come with the `DPoP` scheme and a valid proof for this request (`htm`,
 * `htu`, `ath`, a fresh `iat`, the key's thumbprint). A failure is an
 * `OAuthError` `invalid_token` whose `response.response` is the 401 to send.
 *
 * @example
 * ```ts ignore
 * import { jwtAccessTokenVerifier } from "@authsvc/oauth2/oidc";
 * import { OAuthError } from "@authsvc/oauth2";
 * const verify = jwtAccessTokenVerifier({ issuer: "https://id.example.com", audience: "https://api.example.com" });
 * Deno.serve(async (req) => {
 *   try {
 *     const claims = await verify(req);
 *     return Response.json({ hello: claims.sub });
 *   } catch (e) {
 *     if (e instanceof OAuthError) return e.response.response; // 401 with WWW-Authenticate
 *     throw e;
 *   }
 * });
 * ```
 */
export function jwtAccessTokenVerifier(options: JwtAccessTokenOptions): VerifyAccessToken {
  if (!options || typeof options.issuer !== "string" || !options.issuer) {
    throw new TypeError(`jwtAccessTokenVerifier: "issuer" must be a non-empty string`);
  }
  const audiences = Array.isArray(options.audience) ? options.audience : [options.audience];
  if (audiences.length === 0 || audiences.some((a) => typeof a !== "string" || !a)) {
    throw new TypeError(`jwtAccessTokenVerifier: "audience" must be a string or strings`);
  }
  const doFetch = options.fetch ?? fetch;
  const skew = options.clockSkew ?? 60;
  const load = async (url: string) => {
    const res = await doFetch(url, { headers: { accept: "application/json" } });
    if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
    return await res.json();
  };
  let jwksUri: Promise<string> | undefined;
  const findJwks = () =>
    jwksUri ??= options.jwksUri ? Promise.resolve(options.jwksUri) : jwksFromMetadata(
      options.issuer,
      load,
    ).catch((e) => {
      jwksUri = undefined;
      throw e;
    });

  const verifyToken = async (token: string): Promise<JwtAccessTokenClaims> => {
    let jws;
    try {
      jws = decodeJws(token, "access token");
    } catch (e) {
      throw invalidToken((e as Error).message);
    }
    const typ = String(jws.header.typ ?? "").toLowerCase();
    if (typ !== "at+jwt" && typ !== "application/at+jwt") {
      throw invalidToken(`the access token's typ ${JSON.stringify(jws.header.typ)} is not at+jwt`);
    }
    let key: CryptoKey;
    let alg: string;
    try {
      alg = checkAlg(jws, options.algorithms ?? ASYMMETRIC_ALGORITHMS, "access token");
      const kid = typeof jws.header.kid === "string" ? jws.header.kid : undefined;
      key = await keyFromJwks(await findJwks(), load, alg, kid);
    } catch (e) {
      throw invalidToken((e as Error).message);
    }
    if (!await verifySignature(jws, alg, key)) {
      throw invalidToken("the access token's signature does not verify");
    }
    const c = jws.claims;
    for (const name of REQUIRED) {
      if (c[name] === undefined) throw invalidToken(`the access token has no ${name}`);
    }
    if (c.iss !== options.issuer) {
      throw invalidToken(`iss ${JSON.stringify(c.iss)} is not ${options.issuer}`);
    }
    const aud = Array.isArray(c.aud) ? c.aud : [c.aud];
    if (!aud.some((a) => audiences.includes(a as string))) {
      throw invalidToken(`aud ${JSON.stringify(c.aud)} is not this resource`);
    }
    const now = Math.floor(Date.now() / 1000);
    if (typeof c.exp !== "number" || c.exp + skew <= now) {
      throw invalidToken("the access token expired");
    }
    if (typeof c.nbf === "number" && c.nbf - skew > now) {
      throw invalidToken("the access token is not valid yet");
    }
    if (typeof c.iat !== "number" || c.iat - skew > now) {
      throw invalidToken("the access token's iat is in the future");
    }
    return c as JwtAccessTokenClaims;
  };

  /** Proof ids seen within their validity (RFC 9449 §11.1: a proof is used once). */
  const seenProofs = new Map<string, number>();
  return async (input) => {
    if (typeof input === "string") return await verifyToken(input);
    const auth = /^(Bearer|DPoP)\s+([A-Za-z0-9\-._~+/]+=*)$/i.exec(
      input.headers.get("authorization") ?? "",
    );
    if (!auth) throw invalidToken("no access token in the Authorization header");
    const scheme = auth[1].toLowerCase() === "dpop" ? "DPoP" : "Bearer";
    const claims = await verifyToken(auth[2]);
    const jkt = claims.cnf?.jkt;
    if (jkt !== undefined || scheme === "DPoP") {
      if (jkt === undefined) throw invalidToken("the token is not DPoP-bound", "DPoP");
      if (scheme !== "DPoP") {
        throw invalidToken("a DPoP-bound token must be sent with the DPoP scheme", "DPoP");
      }
      const jti = await checkDpopProof(input, auth[2], jkt, skew);
      rememberProof(seenProofs, jti, skew);
    }
    return claims;
  };
}

/** The `jwks_uri` of the issuer's metadata (RFC 8414, else OpenID Connect Discovery). */
async function jwksFromMetadata(
  issuer: string,
  load: (url: string) => Promise<unknown>,
): Promise<string> {
  const base = new URL(issuer);
  const path = base.pathname.replace(/\/$/, "");
  for (
    const url of [
      `${base.origin}/.well-known/oauth-authorization-server${path}`,
      `${base.origin}${path}/.well-known/openid-configuration`,
    ]
  ) {
    const md = await load(url).catch(() => null) as Record<string, unknown> | null;
    if (md && md.issuer === issuer && typeof md.jwks_uri === "string") return md.jwks_uri;
  }
  throw new Error(`no metadata with a jwks_uri for ${issuer}`);
}

async function sha256(text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8(text))));
}

/** The DPoP proof of `request` for the bound `token` (RFC 9449 §4.3). */
async function checkDpopProof(
  request: Request,
  token: string,
  jkt: string,
  skew: number,
): Promise<string> {
  const header = request.headers.get("dpop");
  const fail = (why: string) => invalidToken(`DPoP proof: ${why}`, "DPoP");
  if (!header) throw fail("missing");
  let proof;
  try {
    proof = decodeJws(header, "DPoP proof");
  } catch (e) {
    throw fail((e as Error).message);
  }
  const { header: h, claims: c } = proof;
  if (h.typ !== "dpop+jwt") throw fail("typ is not dpop+jwt");
  const jwk = h.jwk as JsonWebKey | undefined;
  if (!jwk || typeof jwk !== "object" || "d" in jwk) throw fail("no public jwk in the header");
  let alg: string;
  let key: CryptoKey;
  try {
    alg = checkAlg(proof, ASYMMETRIC_ALGORITHMS, "DPoP proof");
    key = await crypto.subtle.importKey("jwk", jwk, algSpec(alg).importParams, false, [
      "verify",
    ]);
  } catch (e) {
    throw fail((e as Error).message);
  }
  if (!await verifySignature(proof, alg, key)) throw fail("the signature does not verify");
  const members = jwk.kty === "EC"
    ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
    : jwk.kty === "OKP"
    ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x }
    : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  if (await sha256(JSON.stringify(members)) !== jkt) throw fail("the key is not the token's");
  const url = new URL(request.url);
  if (c.htm !== request.method) throw fail(`htm ${JSON.stringify(c.htm)} is not ${request.method}`);
  if (c.htu !== `${url.origin}${url.pathname}`) throw fail("htu is not this URL");
  if (c.ath !== await sha256(token)) throw fail("ath is not the token's hash");
  const now = Math.floor(Date.now() / 1000);
  if (typeof c.iat !== "number" || Math.abs(c.iat - now) > skew) throw fail("iat is not recent");
  if (typeof c.jti !== "string") throw fail("no jti");
  return c.jti;
}

/** Refuses a proof id seen before; forgets ids once their proof is too old anyway. */
function rememberProof(seen: Map<string, number>, jti: string, skew: number): void {
  const now = Date.now() / 1000;
  if ((seen.get(jti) ?? 0) > now) throw invalidToken("DPoP proof: replayed (jti seen)", "DPoP");
  if (seen.size >= 10_000) {
    for (const [id, until] of seen) if (until <= now) seen.delete(id);
  }
  seen.set(jti, now + 2 * skew);
}

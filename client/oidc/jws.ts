/**
 * Verifying compact JWS with WebCrypto: decoding, the key from a JWKS
 * (fetched once per URL and kept; fetched again when a token names an
 * unknown `kid`: key rotation), and the signature. Shared by ID tokens,
 * JARM responses and JWT access tokens (RFC 9068).
 * @module
 */
import { fromBase64, utf8 } from "../encoding.ts";
import { algSpec } from "../jwt.ts";

/** The algorithms FAPI 2.0 allows (FAPI 2.0 Security Profile §5.4). */
export const FAPI_ALGORITHMS: readonly string[] = ["PS256", "ES256", "EdDSA"];

/** Asymmetric algorithms accepted by default (`none` and HS* never are, unless asked for). */
export const ASYMMETRIC_ALGORITHMS: readonly string[] = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "EdDSA",
];

/** A JWK as a JWKS holds it. */
export type PublicJwk = JsonWebKey & { kid?: string; alg?: string; use?: string };

/** A decoded compact JWS. */
export interface DecodedJws {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  /** `base64url(header).base64url(payload)`: what the signature covers. */
  signingInput: string;
  signature: Uint8Array<ArrayBuffer>;
}

function b64urlBytes(part: string): Uint8Array<ArrayBuffer> {
  return fromBase64(part.replace(/-/g, "+").replace(/_/g, "/")) as Uint8Array<ArrayBuffer>;
}

function decodePart(part: string): Record<string, unknown> {
  const parsed = JSON.parse(new TextDecoder().decode(b64urlBytes(part)));
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error("not an object");
  }
  return parsed;
}

/**
 * Decodes a compact JWS (no verification).
 *
 * @throws {Error} with a message naming what is wrong (not three parts, not JSON)
 */
export function decodeJws(jws: string, what: string): DecodedJws {
  const parts = typeof jws === "string" ? jws.split(".") : [];
  if (parts.length !== 3) throw new Error(`the ${what} is not a compact JWS`);
  try {
    return {
      header: decodePart(parts[0]),
      claims: decodePart(parts[1]),
      signingInput: `${parts[0]}.${parts[1]}`,
      signature: b64urlBytes(parts[2]),
    };
  } catch {
    throw new Error(`the ${what}'s header or payload is not JSON`);
  }
}

interface JwksEntry {
  keys: PublicJwk[];
  loading?: Promise<void>;
}
const jwksCache = new Map<string, JwksEntry>();

/** Loads a JWKS document: resolves to its parsed JSON. */
export type JwksLoader = (url: string) => Promise<unknown>;

async function refresh(url: string, entry: JwksEntry, load: JwksLoader): Promise<void> {
  entry.loading ??= load(url).then((doc) => {
    const keys = (doc as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys)) throw new Error(`the JWKS at ${url} has no "keys"`);
    entry.keys = keys;
  }).finally(() => {
    entry.loading = undefined;
  });
  await entry.loading;
}

/** The key type (`kty`) of a JWS algorithm. */
function ktyOf(alg: string): string {
  return alg.startsWith("E") ? (alg === "EdDSA" ? "OKP" : "EC") : "RSA";
}

/**
 * The verification key for `alg` and `kid` from the JWKS at `url`: from the
 * cache, or fetched again once when no key matches (key rotation).
 *
 * @throws {Error} when no key, or several keys without a `kid`, match
 */
export async function keyFromJwks(
  url: string,
  load: JwksLoader,
  alg: string,
  kid: string | undefined,
): Promise<CryptoKey> {
  let entry = jwksCache.get(url);
  let fetched = false;
  if (!entry) {
    entry = { keys: [] };
    jwksCache.set(url, entry);
    await refresh(url, entry, load).catch((e) => {
      jwksCache.delete(url);
      throw e;
    });
    fetched = true;
  }
  const kty = ktyOf(alg);
  const pick = () =>
    entry!.keys.filter((k) =>
      k.kty === kty && (kid === undefined || k.kid === kid) &&
      (k.use === undefined || k.use === "sig") && (k.alg === undefined || k.alg === alg)
    );
  let candidates = pick();
  if (candidates.length === 0 && !fetched) {
    await refresh(url, entry, load);
    candidates = pick();
  }
  if (candidates.length !== 1) {
    throw new Error(
      candidates.length === 0
        ? `no key in the JWKS matches kid ${JSON.stringify(kid)} and ${alg}`
        : `several keys in the JWKS match a token without kid`,
    );
  }
  const { alg: _a, use: _u, key_ops: _k, kid: _i, ...jwk } = candidates[0];
  return await crypto.subtle.importKey("jwk", jwk, algSpec(alg).importParams, false, ["verify"]);
}

/** An HMAC verification key from a shared secret (HS* tokens signed with the client secret). */
export function hmacKey(secret: string, alg: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", utf8(secret), algSpec(alg).importParams, false, [
    "verify",
  ]);
}

/** Whether the signature of `jws` verifies with `key`. */
export function verifySignature(jws: DecodedJws, alg: string, key: CryptoKey): Promise<boolean> {
  return crypto.subtle.verify(algSpec(alg).signParams, key, jws.signature, utf8(jws.signingInput));
}

/** The `alg` of a decoded JWS when it is one of `allowed`, else an Error naming it. */
export function checkAlg(jws: DecodedJws, allowed: readonly string[], what: string): string {
  const alg = jws.header.alg;
  if (typeof alg !== "string" || !allowed.includes(alg)) {
    throw new Error(`the ${what}'s alg ${JSON.stringify(alg)} is not accepted`);
  }
  return alg;
}

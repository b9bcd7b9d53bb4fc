/**
 * JWS compact signing with WebCrypto, for `private_key_jwt` client assertions
 * (RFC 7523 §2.2) and the JWT bearer assertion grant (RFC 7523 §2.1).
 * Keys: a `CryptoKey`, a JWK, a PEM string (PKCS#8 `PRIVATE KEY`, or PKCS#1
 * `RSA PRIVATE KEY`), or for HS* a secret string or bytes.
 * @module
 */
import { base64url, fromBase64, utf8 } from "./encoding.ts";
import { type Jwk, type SigningKeyInput, SUPPORTED_ALGORITHMS } from "./signing_keys.ts";

export type { Jwk, SigningKeyInput } from "./signing_keys.ts";

/** Import and sign/verify parameters of a JWS algorithm. */
export interface AlgSpec {
  importParams: AlgorithmIdentifier | RsaHashedImportParams | EcKeyImportParams | HmacImportParams;
  signParams: AlgorithmIdentifier | RsaPssParams | EcdsaParams;
}

/** WebCrypto parameters of a JWS algorithm. */
export function algSpec(alg: string): AlgSpec {
  const bits = alg.slice(2);
  const hash = `SHA-${bits}`;
  switch (alg) {
    case "HS256":
    case "HS384":
    case "HS512":
      return { importParams: { name: "HMAC", hash }, signParams: { name: "HMAC" } };
    case "RS256":
    case "RS384":
    case "RS512":
      return {
        importParams: { name: "RSASSA-PKCS1-v1_5", hash },
        signParams: { name: "RSASSA-PKCS1-v1_5" },
      };
    case "PS256":
    case "PS384":
    case "PS512":
      return {
        importParams: { name: "RSA-PSS", hash },
        signParams: { name: "RSA-PSS", saltLength: Number(bits) / 8 },
      };
    case "ES256":
    case "ES384":
      return {
        importParams: { name: "ECDSA", namedCurve: `P-${bits}` },
        signParams: { name: "ECDSA", hash },
      };
    case "EdDSA":
      return { importParams: { name: "Ed25519" }, signParams: { name: "Ed25519" } };
    default:
      throw new TypeError(
        `Unsupported signing algorithm "${alg}"; use one of ${SUPPORTED_ALGORITHMS.join(", ")}`,
      );
  }
}

/**
 * Imports a signing key for `alg`.
 *
 * @throws {TypeError} for an unsupported algorithm or a key of the wrong form
 */
export async function importSigningKey(key: SigningKeyInput, alg: string): Promise<CryptoKey> {
  const spec = algSpec(alg);
  if (typeof CryptoKey !== "undefined" && key instanceof CryptoKey) return key;
  const hmac = alg.startsWith("HS");
  if (key instanceof Uint8Array) {
    if (!hmac) throw new TypeError(`A raw byte key only works with HS* algorithms, not "${alg}"`);
    return await crypto.subtle.importKey(
      "raw",
      new Uint8Array(key) as Uint8Array<ArrayBuffer>,
      spec.importParams,
      false,
      ["sign"],
    );
  }
  if (typeof key === "string") {
    const pem = /-----BEGIN ([A-Z ]+)-----([\s\S]+?)-----END \1-----/.exec(key);
    if (!pem) {
      if (!hmac) {
        throw new TypeError(`The key for "${alg}" must be a PEM private key, a JWK or a CryptoKey`);
      }
      return await crypto.subtle.importKey("raw", utf8(key), spec.importParams, false, ["sign"]);
    }
    const der = fromBase64(pem[2]);
    const label = pem[1];
    const pkcs8 = label === "PRIVATE KEY"
      ? der
      : label === "RSA PRIVATE KEY"
      ? wrapPkcs1(der)
      : null;
    if (!pkcs8) {
      throw new TypeError(
        `Unsupported PEM "${label}": convert it to PKCS#8 ("-----BEGIN PRIVATE KEY-----"), ` +
          `for example with "openssl pkcs8 -topk8 -nocrypt"`,
      );
    }
    try {
      return await crypto.subtle.importKey("pkcs8", pkcs8, spec.importParams, false, ["sign"]);
    } catch (cause) {
      throw new TypeError(`The PEM key cannot be used with "${alg}"`, { cause });
    }
  }
  if (key && typeof key === "object" && typeof (key as JsonWebKey).kty === "string") {
    const jwk: Jwk = { ...(key as Jwk) };
    delete jwk.kid;
    delete jwk.alg;
    delete jwk.key_ops;
    delete jwk.use;
    try {
      return await crypto.subtle.importKey("jwk", jwk, spec.importParams, false, ["sign"]);
    } catch (cause) {
      throw new TypeError(`The JWK cannot be used with "${alg}"`, { cause });
    }
  }
  throw new TypeError(`The key for "${alg}" must be a CryptoKey, a JWK, a PEM string or bytes`);
}

/** DER: `tag`, the length of `content` (keys are shorter than 16 MB), `content`. */
function der(tag: number, content: number[]): number[] {
  const n = content.length;
  const length = n < 128
    ? [n]
    : n < 256
    ? [0x81, n]
    : n < 65536
    ? [0x82, n >> 8, n & 255]
    : [0x83, n >> 16, (n >> 8) & 255, n & 255];
  return [tag, ...length, ...content];
}

/**
 * Wraps a PKCS#1 RSAPrivateKey in a PKCS#8 PrivateKeyInfo: SEQUENCE { version 0,
 * SEQUENCE { OID 1.2.840.113549.1.1.1 (rsaEncryption), NULL }, OCTET STRING { key } }.
 */
function wrapPkcs1(pkcs1: Uint8Array): Uint8Array<ArrayBuffer> {
  const rsaEncryption = [0x30, 13, 6, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 13, 1, 1, 1, 5, 0];
  return new Uint8Array(der(0x30, [2, 1, 0, ...rsaEncryption, ...der(4, [...pkcs1])]));
}

/**
 * Signs `payload` as a compact JWS.
 *
 * @param payload the claims
 * @param key a `CryptoKey` already imported for `alg`
 * @param alg JWS algorithm name
 * @param header extra header fields (`kid` ...)
 * @returns the compact JWS
 */
export async function signJwt(
  payload: Record<string, unknown>,
  key: CryptoKey,
  alg: string,
  header: Record<string, unknown> = {},
): Promise<string> {
  const spec = algSpec(alg);
  const head = base64url(utf8(JSON.stringify({ alg, typ: "JWT", ...header })));
  const body = base64url(utf8(JSON.stringify(payload)));
  const input = `${head}.${body}`;
  const signature = await crypto.subtle.sign(spec.signParams, key, utf8(input));
  return `${input}.${base64url(new Uint8Array(signature))}`;
}

/** A unique JWT id (128 random bits, base64url). */
export function randomJti(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(16)));
}

/**
 * JWS compact signing with WebCrypto, for `private_key_jwt` client assertions
 * (RFC 7523 §2.2) and the JWT bearer assertion grant (RFC 7523 §2.1).
 * Keys: a `CryptoKey`, a JWK, a PEM string (PKCS#8 `PRIVATE KEY`, or PKCS#1
 * `RSA PRIVATE KEY`), or for HS* a secret string or bytes.
 * @module
 */
import { base64url, fromBase64, utf8 } from "./encoding.ts";

/**
 * The signing algorithms this library supports.
 *
 * @example
 * ```ts
 * import { SUPPORTED_ALGORITHMS } from "@authsvc/oauth2";
 * console.log(SUPPORTED_ALGORITHMS.includes("EdDSA")); // true
 * ```
 */
export const SUPPORTED_ALGORITHMS: readonly string[] = [
  "HS256",
  "HS384",
  "HS512",
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

/**
 * A JSON Web Key, with the `kid` that WebCrypto's type leaves out.
 *
 * @example
 * ```ts
 * import { Client, type Jwk } from "@authsvc/oauth2";
 * const key: Jwk = { kty: "EC", crv: "P-256", x: "...", y: "...", d: "...", kid: "key-1" };
 * new Client("id", "", { site: "https://id.example.com", authScheme: "private_key_jwt", clientAssertionKey: key });
 * ```
 */
export type Jwk = JsonWebKey & { kid?: string };

/**
 * A key the signer accepts.
 *
 * @example
 * ```ts
 * import { type SigningKeyInput } from "@authsvc/oauth2";
 * const hmac: SigningKeyInput = "a shared secret of at least 32 bytes....";
 * const pem: SigningKeyInput = "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----";
 * console.log(hmac.length, pem.length);
 * ```
 */
export type SigningKeyInput = CryptoKey | Jwk | string | Uint8Array;

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

/** DER length bytes. */
function derLength(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  while (n > 0) {
    bytes.unshift(n & 0xff);
    n >>= 8;
  }
  return [0x80 | bytes.length, ...bytes];
}

function der(tag: number, content: Uint8Array): Uint8Array {
  const len = derLength(content.length);
  const out = new Uint8Array(1 + len.length + content.length);
  out[0] = tag;
  out.set(len, 1);
  out.set(content, 1 + len.length);
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Wraps a PKCS#1 RSAPrivateKey in a PKCS#8 PrivateKeyInfo. */
function wrapPkcs1(pkcs1: Uint8Array): Uint8Array<ArrayBuffer> {
  const version = Uint8Array.of(0x02, 0x01, 0x00);
  // SEQUENCE { OID 1.2.840.113549.1.1.1 (rsaEncryption), NULL }
  const algorithm = Uint8Array.of(
    0x30,
    0x0d,
    0x06,
    0x09,
    0x2a,
    0x86,
    0x48,
    0x86,
    0xf7,
    0x0d,
    0x01,
    0x01,
    0x01,
    0x05,
    0x00,
  );
  return der(0x30, concat(version, algorithm, der(0x04, pkcs1))) as Uint8Array<ArrayBuffer>;
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

/**
 * The algorithms and key forms of the library's JWS signer (`jwt.ts`), apart
 * from the signer so that naming them does not load it.
 * @module
 */

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

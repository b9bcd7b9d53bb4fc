/**
 * Random secrets and their hashes. Tokens, codes and nonces are stored only as
 * SHA-256 hashes; comparisons of secrets the server holds in memory use
 * `timingSafeEqual`.
 *
 * Hashes are node:crypto's, synchronous: the callers compute them inside
 * plain functions, where WebCrypto's `crypto.subtle` would answer with a
 * promise; HMACs are two of those hashes (below). Text is hashed as UTF-8,
 * the bytes `TextEncoder` gives (node:crypto's `update(text, "utf8")` writes
 * a lone surrogate as U+FFFD too; tests/server/core/crypto_test.ts compares
 * with WebCrypto).
 */
import { createHash } from "node:crypto";

const enc = new TextEncoder();

/** `n` random bytes as base64url (no padding). */
export function randomToken(n = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(n)));
}

/** `n` random bytes as lower-case hex (GoTrue's `hashed_token` format for n = 28). */
export function randomHex(n: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(n)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

/** A random numeric code of `digits` digits (uniform, leading zeros kept). */
export function randomDigits(digits: number): string {
  let out = "";
  const buf = new Uint32Array(digits);
  while (out.length < digits) {
    crypto.getRandomValues(buf);
    for (const x of buf) {
      if (x < 4_294_967_290) out += String(x % 10); // drop the biased tail
      if (out.length === digits) break;
    }
  }
  return out;
}

/** Bytes as base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** SHA-256 of a string, lower-case hex. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** SHA-256 of a string, base64url (PKCE S256). */
export function sha256Base64url(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("base64url");
}

/** The UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, as `update(text, "utf8")` does). */
function utf8(text: string): Uint8Array {
  return enc.encode(text);
}

/** Compares two strings in time independent of where they differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = enc.encode(a);
  const y = enc.encode(b);
  let diff = x.length ^ y.length;
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) diff |= (x[i % (x.length || 1)] ?? 0) ^ (y[i % (y.length || 1)] ?? 0);
  return diff === 0;
}

/**
 * An HMAC-SHA256 key (see `hmacKey`): the key's two 64-byte pads, XORed once (RFC 2104), so
 * an HMAC is two SHA-256 hashes. Kept beside node:crypto's createHmac, which in Deno costs
 * five times as much per call (it prepares the key on every call); docs/architecture.md,
 * "Performance shortcuts".
 */
export interface HmacKey {
  /** key XOR 0x36 ... */
  readonly ipad: Uint8Array;
  /** key XOR 0x5c ... */
  readonly opad: Uint8Array;
}

/** SHA-256's block size in bytes. */
const BLOCK = 64;

/** HMAC-SHA256 key from a secret (a string is taken as its UTF-8 bytes). */
export function hmacKey(secret: string | Uint8Array): HmacKey {
  let k: Uint8Array = typeof secret === "string" ? utf8(secret) : secret;
  if (k.length > BLOCK) k = createHash("sha256").update(k).digest();
  const ipad = new Uint8Array(BLOCK).fill(0x36);
  const opad = new Uint8Array(BLOCK).fill(0x5c);
  for (let i = 0; i < k.length; i++) {
    ipad[i] ^= k[i];
    opad[i] ^= k[i];
  }
  return { ipad, opad };
}

/** HMAC-SHA256 of `text`, base64url. */
export function hmacBase64url(key: HmacKey, text: string): string {
  return hmacOuter(key, text).digest("base64url");
}

/** HMAC-SHA256 of `text`, lower-case hex. */
export function hmacHex(key: HmacKey, text: string): string {
  return hmacOuter(key, text).digest("hex");
}

/** H(opad || H(ipad || text)), before its digest. */
function hmacOuter(key: HmacKey, text: string) {
  const inner = createHash("sha256").update(key.ipad).update(text, "utf8").digest();
  return createHash("sha256").update(key.opad).update(inner);
}

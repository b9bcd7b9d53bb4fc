/**
 * Random secrets and their hashes. Tokens, codes and nonces are stored only as
 * SHA-256 hashes; comparisons of secrets the server holds in memory use
 * `timingSafeEqual`.
 */
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
export async function sha256Hex(text: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(text)));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** SHA-256 of a string, base64url (PKCE S256). */
export async function sha256Base64url(text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(text))));
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

/** HMAC-SHA256 key for deriving values from a server secret. */
export async function hmacKey(secret: string): Promise<CryptoKey> {
  return await crypto.subtle.importKey(
    "raw",
    enc.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    [
      "sign",
    ],
  );
}

/** HMAC-SHA256 of `text`, base64url. */
export async function hmacBase64url(key: CryptoKey, text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(text))));
}

/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP) with
 * WebCrypto's HMAC, base32 secrets (RFC 4648, no padding, as authenticator
 * apps expect), and the `otpauth://` key URI that authenticator apps scan.
 *
 * The server's profile is the one every authenticator app uses: HMAC-SHA1,
 * 6 digits, 30-second steps. `totpMatch` accepts one step of clock drift on
 * either side and reports which step matched, so the caller can refuse a code
 * whose step was already used.
 */

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** Bytes as base32 (RFC 4648) without padding. */
export function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * Base32 text as bytes; case, spaces and padding are ignored (people copy
 * secrets by hand). Throws TypeError for any other character.
 */
export function base32Decode(text: string): Uint8Array {
  const clean = text.toUpperCase().replace(/[\s=]/g, "");
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of clean) {
    const i = B32.indexOf(ch);
    if (i < 0) throw new TypeError(`Invalid base32 character "${ch}"`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return new Uint8Array(out);
}

/** A new random TOTP secret: 20 bytes (160 bits, RFC 4226's recommendation), base32. */
export function newTotpSecret(): string {
  return base32Encode(crypto.getRandomValues(new Uint8Array(20)));
}

/** HMAC algorithms RFC 6238 names. */
export type TotpHash = "SHA-1" | "SHA-256" | "SHA-512";

/** TOTP parameters; the defaults are the server's profile. */
export interface TotpOptions {
  digits?: number;
  period?: number;
  hash?: TotpHash;
}

/** HOTP (RFC 4226) of a counter, `digits` long. */
export async function hotp(
  key: Uint8Array,
  counter: number,
  digits = 6,
  hash: TotpHash = "SHA-1",
): Promise<string> {
  const msg = new Uint8Array(8);
  new DataView(msg.buffer).setBigUint64(0, BigInt(counter));
  const k = await crypto.subtle.importKey(
    "raw",
    key as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", k, msg));
  const offset = mac[mac.length - 1] & 0x0f;
  const bin = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) | (mac[offset + 2] << 8) |
    mac[offset + 3];
  return String(bin % 10 ** digits).padStart(digits, "0");
}

/** The time step of an instant (seconds since the epoch / period). */
export function totpStep(unixSeconds: number, period = 30): number {
  return Math.floor(unixSeconds / period);
}

/** The TOTP code of a base32 secret at an instant (Unix seconds). */
export async function totpCode(
  secret: string,
  unixSeconds: number,
  opts: TotpOptions = {},
): Promise<string> {
  return await hotpOfSecret(base32Decode(secret), totpStep(unixSeconds, opts.period), opts);
}

function hotpOfSecret(key: Uint8Array, step: number, opts: TotpOptions): Promise<string> {
  return hotp(key, step, opts.digits ?? 6, opts.hash ?? "SHA-1");
}

/**
 * Checks a code against the steps around `unixSeconds` (one step of drift on
 * either side) and returns the matching step, or null. Every candidate is
 * computed and compared, so the time taken does not tell which one matched.
 */
export async function totpMatch(
  secret: string,
  code: string,
  unixSeconds: number,
  opts: TotpOptions = {},
): Promise<number | null> {
  const digits = opts.digits ?? 6;
  if (code.length !== digits || !/^\d+$/.test(code)) return null;
  const key = base32Decode(secret);
  const now = totpStep(unixSeconds, opts.period);
  let found: number | null = null;
  for (const step of [now - 1, now, now + 1]) {
    const expected = await hotpOfSecret(key, step, opts);
    let diff = 0;
    for (let i = 0; i < digits; i++) diff |= expected.charCodeAt(i) ^ code.charCodeAt(i);
    if (diff === 0 && found === null) found = step;
  }
  return found;
}

/**
 * The key URI authenticator apps scan
 * (`otpauth://totp/<issuer>:<account>?secret=...&issuer=...`), in the format
 * Google Authenticator documents.
 */
export function otpauthUri(opts: { secret: string; issuer: string; account: string }): string {
  const label = `${encodeURIComponent(opts.issuer)}:${encodeURIComponent(opts.account)}`;
  const q = new URLSearchParams({
    algorithm: "SHA1",
    digits: "6",
    issuer: opts.issuer,
    period: "30",
    secret: opts.secret,
  });
  return `otpauth://totp/${label}?${q.toString().replaceAll("+", "%20")}`;
}

/**
 * The refresh token's text and the key it is stored under.
 *
 * A refresh token is `<stamp>.<secret>`: `stamp` is the time it was issued, in
 * milliseconds since 1970, as 12 lower-case hex digits, and `secret` is 32
 * random bytes as base64url (a rotated token's child: the HMAC of its parent,
 * auth/sessions.ts). The database keeps only its key, the stamp followed by
 * the SHA-256 (hex) of the whole token: 76 characters.
 *
 * Why the stamp: the key is what `refresh_tokens_token_hash_key` is ordered
 * by. With a bare hash every exchange read one random leaf of that index and
 * wrote two (the old row's new version and the child), which on millions of
 * rows are mostly outside the cache and logged whole after each checkpoint
 * (full-page writes); with the stamp first, new keys go to the
 * right-hand edge and a live token's key sits among the other recent ones.
 * The stamp tells nobody more than the access token issued with it does (its
 * `iat`); the secret is as before.
 *
 * Tokens issued before this format (43 characters of base64url, no dot) are
 * still honoured: their key is the bare SHA-256 (64 characters), as it was.
 */
import { sha256Hex } from "../util/crypto.ts";

/** `<12 lower-case hex digits>.`: the start of a stamped token. */
const STAMPED = /^[0-9a-f]{12}\./;
const STAMP_DIGITS = 12;
/** The length of a stamped token's key: the stamp and 64 hex digits of SHA-256. */
const STAMPED_KEY_LENGTH = STAMP_DIGITS + 64;

/** The stamp of a token issued at `at`. */
export function refreshTokenStamp(at: Date): string {
  const ms = Math.max(0, Math.floor(at.getTime()));
  return ms.toString(16).padStart(STAMP_DIGITS, "0").slice(-STAMP_DIGITS);
}

/** A token made of `secret`, issued at `at` (or bearing `stamp`, a child handed out again). */
export function stampedRefreshToken(secret: string, at: Date | { stamp: string }): string {
  const stamp = at instanceof Date ? refreshTokenStamp(at) : at.stamp;
  return `${stamp}.${secret}`;
}

/** The key `token` is stored and looked up under (`refresh_tokens.token_hash`). */
export function refreshTokenKey(token: string): string {
  const hash = sha256Hex(token);
  return STAMPED.test(token) ? token.slice(0, STAMP_DIGITS) + hash : hash;
}

/**
 * The stamp a stored key carries, or null for a key of the earlier format
 * (a bare SHA-256). The child already handed out for a token is rebuilt
 * with its own stamp when the token is exchanged again within the reuse
 * interval, so the client gets the very same text.
 */
export function stampOfKey(key: string): string | null {
  return key.length === STAMPED_KEY_LENGTH && /^[0-9a-f]+$/.test(key)
    ? key.slice(0, STAMP_DIGITS)
    : null;
}

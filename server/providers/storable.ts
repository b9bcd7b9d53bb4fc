/**
 * A provider user as it can be stored. PostgreSQL's text and jsonb refuse a
 * NUL character (U+0000) and jsonb an unpaired UTF-16 surrogate (`"\ud800"`
 * is valid JSON, so a provider's ID token or user-info answer can carry
 * one); text would silently turn a lone surrogate into U+FFFD, making two
 * different values one. So, for the ID-token grant and `/callback` alike:
 *
 * - the claims that identify someone (the provider's user id, the issuer,
 *   every e-mail address) are refused with a ProviderError naming the claim:
 *   cleaning them could make two identities, or two addresses, one. An
 *   e-mail address is also refused with a control or format character (a
 *   bidi mark makes one address look like another, as api/input.ts
 *   `checkEmail` refuses them) and kept in the canonical form every lookup
 *   compares (auth/users.ts `normalizeEmail`: trimmed, lower case, NFC);
 * - the claims that only describe (name, picture, user name, custom claims,
 *   their member names too) are cleaned: NUL characters dropped, lone
 *   surrogates replaced by U+FFFD (a provider that cut a name inside an emoji
 *   still signs its user in);
 * - provider tokens kept for the PKCE exchange are refused like identifiers.
 */
import { normalizeEmail } from "../util/address.ts";
import { ProviderError, type ProviderUser } from "./types.ts";

/** Control (Cc) and format (Cf: bidi and zero-width marks) characters. */
const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

/** Why a string cannot be stored as it is, or undefined. */
function unstorable(v: string): string | undefined {
  if (v.includes("\0")) return "contains a NUL character";
  if (!v.isWellFormed()) return "contains an unpaired UTF-16 surrogate";
  return undefined;
}

/** `v` without NUL characters, lone surrogates replaced by U+FFFD. */
function clean(v: string): string {
  return v.replaceAll("\0", "").toWellFormed();
}

/** A JSON value with every string and member name cleaned. */
function cleanJson(v: unknown, depth = 0): unknown {
  if (typeof v === "string") return clean(v);
  if (v === null || typeof v !== "object" || depth > 64) return v;
  if (Array.isArray(v)) return v.map((x) => cleanJson(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[clean(k)] = cleanJson(x, depth + 1);
  return out;
}

/** Throws ProviderError when an identifying value of the provider cannot be stored. */
export function checkIdentifier(what: string, v: string | undefined): void {
  const why = v === undefined ? undefined : unstorable(v);
  if (why) throw new ProviderError(`the provider's ${what} ${why}`);
}

/**
 * The provider user with its identifying claims checked and its describing
 * claims cleaned (see the module comment).
 *
 * @throws {ProviderError} naming the identifying claim that cannot be stored
 */
export function storableUser(u: ProviderUser): ProviderUser {
  checkIdentifier("user id (sub)", u.id);
  checkIdentifier("issuer (iss)", u.issuer);
  for (const e of u.emails) {
    checkIdentifier("e-mail address", e.email);
    if (INVISIBLE.test(e.email)) {
      throw new ProviderError(
        "the provider's e-mail address contains a control or format character",
      );
    }
  }
  const opt = (v: string | undefined) => v === undefined ? undefined : clean(v);
  return {
    ...u,
    emails: u.emails.map((e) => ({ ...e, email: normalizeEmail(e.email) })),
    name: opt(u.name),
    avatarUrl: opt(u.avatarUrl),
    userName: opt(u.userName),
    customClaims: u.customClaims === undefined
      ? undefined
      : cleanJson(u.customClaims) as Record<string, unknown>,
  };
}

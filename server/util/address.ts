/** The canonical forms of the addresses a user signs in with. */

/**
 * The canonical form of an e-mail address, for storage and every lookup:
 * trimmed, lower case, Unicode NFC (so a composed and a decomposed "é" are one
 * address). Validation is api/input.ts's checkEmail.
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase().normalize("NFC");
}

/**
 * A phone number as stored: E.164 digits without the leading "+" (spaces,
 * dashes, dots and parentheses removed, so "+1 (555) 123-4567" is
 * "15551234567"), or null when it is not an E.164 number. The one rule of
 * every endpoint that takes a phone.
 */
export function normalizePhone(phone: string): string | null {
  // Control and format characters (a BOM or a bidi mark is "whitespace" to \s) are refused,
  // not stripped: what was typed is either a number or not.
  if (/[\p{Cc}\p{Cf}]/u.test(phone)) return null;
  const p = phone.replace(/[\s\-.()]/g, "").replace(/^\+/, "");
  return /^[1-9][0-9]{1,14}$/.test(p) ? p : null;
}

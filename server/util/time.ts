/**
 * Timestamps in and out of text without V8's general-purpose date code on the
 * hot paths: every user JSON carries up to a dozen of them, and
 * `Date.prototype.toISOString` (formatted through C `snprintf`) and
 * `new Date(text)` cost a noticeable share of the server's CPU on `GET /user`.
 * Both give exactly what the built-ins give.
 */

const pad2 = (n: number) => (n < 10 ? "0" + n : "" + n);
const pad3 = (n: number) => (n < 10 ? "00" + n : n < 100 ? "0" + n : "" + n);

/** `d.toISOString()`: "2026-11-25T03:00:28.786Z" (RangeError for an invalid date, as the built-in). */
export function isoString(d: Date): string {
  const y = d.getUTCFullYear();
  // Years outside 0000-9999 are written with a sign and six digits: the built-in does that.
  if (!(y >= 1000 && y <= 9999)) return d.toISOString();
  return y + "-" + pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate()) + "T" +
    pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes()) + ":" + pad2(d.getUTCSeconds()) + "." +
    pad3(d.getUTCMilliseconds()) + "Z";
}

const digit = (s: string, i: number) => s.charCodeAt(i) - 48;
const two = (s: string, i: number) => digit(s, i) * 10 + digit(s, i + 1);

/**
 * A `timestamptz` as PostgreSQL writes it with DateStyle ISO and TimeZone UTC
 * ("2026-11-25 03:00:28.786123+00", fraction optional, 1 to 6 digits), or as
 * its JSON functions write it ("2026-11-25T03:00:28.786123+00:00"), as a
 * Date, to the millisecond (truncated, as `new Date(text)` does); any other
 * form ("infinity", BC dates, five-digit years, other offsets) goes to
 * `new Date(text)`.
 */
export function parseTimestamptz(s: string): Date {
  const n = s.length;
  const sep = s.charCodeAt(10);
  // the offset: "+00" (text output) or "+00:00" (JSON output)
  const tz = n >= 25 && s.charCodeAt(n - 3) === 58 ? 6 : 3;
  if (
    n >= 19 + tz && s.charCodeAt(4) === 45 && (sep === 32 || sep === 84) &&
    s.charCodeAt(n - tz) === 43 && s.charCodeAt(n - tz + 1) === 48 &&
    s.charCodeAt(n - tz + 2) === 48 && (tz === 3 || (s.charCodeAt(n - 2) === 48 &&
      s.charCodeAt(n - 1) === 48))
  ) {
    const year = digit(s, 0) * 1000 + digit(s, 1) * 100 + two(s, 2);
    // Date.UTC reads years 0-99 as 1900-1999: those take the general path.
    if (year < 100) return new Date(s);
    let ms = 0;
    if (n > 19 + tz) {
      const frac = n - tz - 20; // digits between the point at 19 and the offset
      if (s.charCodeAt(19) !== 46 || frac < 1) return new Date(s);
      ms = digit(s, 20) * 100 + (frac > 1 ? digit(s, 21) * 10 : 0) + (frac > 2 ? digit(s, 22) : 0);
    }
    const t = Date.UTC(year, two(s, 5) - 1, two(s, 8), two(s, 11), two(s, 14), two(s, 17), ms);
    if (t === t) return new Date(t); // not NaN
  }
  return new Date(s);
}

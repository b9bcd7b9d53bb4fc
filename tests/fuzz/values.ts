/**
 * Value generators of the fuzz suite: every JSON type, Unicode edge cases
 * (lone surrogates, NUL, controls, confusables, bidi marks, non-BMP), raw
 * byte sequences that are not UTF-8 (overlong forms, encoded surrogates),
 * e-mail and phone shaped strings, huge and deeply nested values.
 */
import { HOSTILE_STRINGS } from "../reliability/malformed.ts";
import type { Rng } from "./rng.ts";

/** Strings that are valid JSON but hostile to a database, a renderer or a comparison. */
export const UNICODE_EDGES: readonly string[] = [
  "\ud800", // lone high surrogate
  "\udfff", // lone low surrogate
  "\udc00\ud800", // a pair in the wrong order
  "x\ud83d", // a cut emoji
  "\u0000", // NUL
  "a\u0000b",
  "\ufffd", // the replacement character itself
  "\u0001\u001f\u007f", // C0 controls and DEL
  "\u0085\u009f", // C1 controls
  "\u202e\u202d", // bidi overrides (right-to-left)
  "\u200f\u200e", // RTL / LTR marks
  "\u2066\u2069", // bidi isolates
  "\u200b\u200c\u200d", // zero-width characters
  "\ufeff", // byte order mark
  "\u2028\u2029", // line and paragraph separators
  "e\u0301", // combining accent (NFD)
  "\u00e9", // precomposed (NFC)
  "\u0430dmin", // Cyrillic a (confusable)
  "\u0456\u043e", // Cyrillic i, o
  "\uff21\uff20", // fullwidth A and @
  "\u0661\u0662\u0663", // Arabic-Indic digits
  "\u0130\u0131", // Turkish dotted / dotless i (lower-casing changes length)
  "\u00df\u1e9e", // sharp s, capital sharp s
  "\u{1d518}\u{1f469}\u200d\u{1f469}\u200d\u{1f467}", // non-BMP letters, ZWJ family
  "\ufdd0\uffff", // non-characters
  "\t\n\r\u000b\u000c",
  "",
  " ",
];

/** Raw byte sequences that are not well-formed UTF-8 (sent as bytes, never through a JS string). */
export const BAD_UTF8: readonly number[][] = [
  [0xc0, 0xaf], // overlong "/"
  [0xe0, 0x80, 0xaf], // overlong "/", three bytes
  [0xf0, 0x80, 0x80, 0xaf], // overlong "/", four bytes
  [0xc0, 0x80], // overlong NUL (modified UTF-8)
  [0xed, 0xa0, 0x80], // an encoded high surrogate (CESU-8)
  [0xed, 0xbf, 0xbf], // an encoded low surrogate
  [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
  [0xff, 0xfe], // never valid
  [0xc3], // truncated sequence
  [0x80, 0x80], // stray continuation bytes
];

const WORDS = ["a", "x", "user", "name", "admin", "root", "test", "0", "-1", "null", "true"];

/** A string from the edge cases, the hostile list, or plain words, sometimes combined. */
export function edgeString(r: Rng): string {
  switch (r.int(6)) {
    case 0:
    case 1:
      return r.pick(UNICODE_EDGES);
    case 2:
      return r.pick(HOSTILE_STRINGS);
    case 3:
      return `${r.pick(WORDS)}${r.pick(UNICODE_EDGES)}${r.pick(WORDS)}`;
    case 4:
      return r.pick(WORDS).repeat(r.range(1, 50));
    default:
      return Array.from({ length: r.range(1, 4) }, () => r.pick(UNICODE_EDGES)).join("");
  }
}

/** A number of any JSON shape, including the extremes. */
export function anyNumber(r: Rng): number {
  return r.pick([
    0,
    -0,
    1,
    -1,
    1.5,
    2 ** 31,
    2 ** 53 + 2,
    -(2 ** 63),
    1e308,
    -1e308,
    5e-324,
    r.range(0, 1000000),
  ]);
}

/** Any JSON value, nested up to `depth` levels. */
export function anyJson(r: Rng, depth = 3): unknown {
  const k = r.int(depth > 0 ? 9 : 6);
  switch (k) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return anyNumber(r);
    case 3:
    case 4:
    case 5:
      return edgeString(r);
    case 6:
      return Array.from({ length: r.int(4) }, () => anyJson(r, depth - 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(4); i > 0; i--) o[anyKey(r)] = anyJson(r, depth - 1);
      return o;
    }
  }
}

/** An object key: plain, hostile, or an edge case (incl. "__proto__"). */
export function anyKey(r: Rng): string {
  return r.pick([
    "name",
    "full_name",
    "avatar_url",
    "__proto__",
    "constructor",
    "prototype",
    "role",
    "provider",
    "providers",
    "",
    "a.b",
    "$gt",
    ...UNICODE_EDGES.slice(0, 12),
  ]);
}

/** An e-mail shaped string: fresh and plain, or carrying an edge case somewhere. */
export function emailish(r: Rng, tag: string): string {
  const local = `fz${tag}`;
  switch (r.int(12)) {
    case 0:
      return `${local}${r.pick(UNICODE_EDGES)}@example.com`;
    case 1:
      return `${local}@ex${r.pick(UNICODE_EDGES)}ample.com`;
    case 2:
      return `${local.toUpperCase()}@EXAMPLE.COM`;
    case 3:
      return ` ${local}@example.com `;
    case 4:
      return `${local}@exämple.com`;
    case 5:
      return `${"a".repeat(r.range(60, 300))}@example.com`;
    case 6:
      return r.pick([`${local}@`, `@example.com`, `${local}@example`, `${local}`, "a@b@c.de"]);
    case 7:
      return `${local}+${r.pick(UNICODE_EDGES)}@example.com`;
    case 8:
      return `"${local}"@example.com`;
    case 9:
      return `${local}\r\nBcc: x@example.com`;
    default:
      return `${local}@example.com`;
  }
}

/** A phone shaped string. */
export function phoneish(r: Rng): string {
  const digits = String(r.range(1000000, 9999999));
  switch (r.int(8)) {
    case 0:
      return `+1555${digits}`;
    case 1:
      return `+1 (555) ${digits.slice(0, 3)}-${digits.slice(3)}`;
    case 2:
      return `\u0661\u0662\u0663${digits}`;
    case 3:
      return `+1555${digits}${r.pick(UNICODE_EDGES)}`;
    case 4:
      return "+".padEnd(r.range(2, 40), "9");
    case 5:
      return `\uff0b1555${digits}`;
    default:
      return `1555${digits}`;
  }
}

/** An object nested `n` levels deep ({"a":{"a":...}}) as JSON text. */
export function deepObjectText(n: number, key = "data"): string {
  return `{"${key}":`.repeat(n) + "{}" + "}".repeat(n);
}

/** An array nested `n` levels deep as JSON text. */
export function deepArrayText(n: number): string {
  return "[".repeat(n) + "]".repeat(n);
}

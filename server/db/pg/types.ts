/**
 * Values between JavaScript and PostgreSQL's text format.
 *
 * Parameters: strings as they are, numbers and bigints as digits, booleans
 * as t/f, Dates as ISO 8601 (typed timestamptz), Uint8Array as bytea hex,
 * arrays as array literals, other objects as JSON. Their type is left to
 * the server to infer (OID 0) except for booleans, Dates and bytea, which
 * are typed so that `SELECT $1` keeps them.
 *
 * Results: bool, int2/int4/int8/oid/float4/float8 as numbers (int8 too: the
 * server's counts and sizes fit), json/jsonb parsed, date/timestamp/
 * timestamptz as Date, bytea as Uint8Array, one-dimensional arrays of those
 * as arrays, everything else (text, uuid, numeric, ...) as the server's text.
 * Once a statement is described, its timestamptz columns are asked for in
 * binary format (`BINARY_RESULTS`): eight bytes the server copies out and
 * `timestamptzFromBinary` reads, instead of text it formats and
 * `new Date(text)` reads back (the same Dates).
 */

/** OIDs of the types handled here. */
export const OID = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int2: 21,
  int4: 23,
  oid: 26,
  json: 114,
  float4: 700,
  float8: 701,
  date: 1082,
  timestamp: 1114,
  timestamptz: 1184,
  jsonb: 3802,
} as const;

/** The text of one parameter, or null. */
export function serialize(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case "string":
      return v;
    case "number":
    case "bigint":
      return String(v);
    case "boolean":
      return v ? "t" : "f";
  }
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Uint8Array) return byteaHex(v);
  if (Array.isArray(v)) return arrayLiteral(v);
  return JSON.stringify(v);
}

/** The type OID sent with a parameter in Parse (0: the server infers it). */
export function paramType(v: unknown): number {
  if (typeof v === "boolean") return OID.bool;
  if (v instanceof Date) return OID.timestamptz;
  if (v instanceof Uint8Array) return OID.bytea;
  return 0;
}

function byteaHex(b: Uint8Array): string {
  let s = "\\x";
  for (let i = 0; i < b.length; i++) s += b[i].toString(16).padStart(2, "0");
  return s;
}

/** An array literal: `{"a","b\"c",NULL}`. */
export function arrayLiteral(xs: unknown[]): string {
  const parts = xs.map((x) => {
    if (x === null || x === undefined) return "NULL";
    if (Array.isArray(x)) return arrayLiteral(x);
    const s = serialize(x) as string;
    return `"${s.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  });
  return `{${parts.join(",")}}`;
}

type Parser = (text: string) => unknown;

const number: Parser = (x) => Number(x);
const bool: Parser = (x) => x === "t";
const json: Parser = (x) => JSON.parse(x);
const date: Parser = (x) => new Date(x);
const bytea: Parser = (x) => {
  const hex = x.startsWith("\\x") ? x.slice(2) : x;
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16);
  return out;
};

const SCALAR = new Map<number, Parser>([
  [OID.bool, bool],
  [OID.bytea, bytea],
  [OID.int8, number],
  [OID.int2, number],
  [OID.int4, number],
  [OID.oid, number],
  [OID.json, json],
  [OID.float4, number],
  [OID.float8, number],
  [OID.date, date],
  [OID.timestamp, date],
  [OID.timestamptz, date],
  [OID.jsonb, json],
]);

/** Array type OID → element parser (undefined element parser: text). */
const ARRAYS = new Map<number, Parser | undefined>([
  [1000, bool],
  [1001, bytea],
  [1005, number],
  [1007, number],
  [1016, number],
  [1021, number],
  [1022, number],
  [1028, number],
  [199, json],
  [3807, json],
  [1182, date],
  [1115, date],
  [1185, date],
  [1009, undefined], // text[]
  [1015, undefined], // varchar[]
  [1014, undefined], // bpchar[]
  [1002, undefined], // char[]
  [1003, undefined], // name[]
  [2951, undefined], // uuid[]
  [1231, undefined], // numeric[]
]);

/** The parser of a result column of type `oid`, or undefined for text. */
export function parserFor(oid: number): Parser | undefined {
  const scalar = SCALAR.get(oid);
  if (scalar) return scalar;
  if (ARRAYS.has(oid)) {
    const el = ARRAYS.get(oid);
    return (x) => parseArray(x, el);
  }
  return undefined;
}

/** Parses a one-dimensional array literal (nested ones become nested arrays). */
export function parseArray(text: string, el: Parser | undefined): unknown[] {
  let i = 0;
  if (text[0] === "[") i = text.indexOf("=") + 1; // explicit bounds: [0:1]={...}
  const read = (): unknown[] => {
    const out: unknown[] = [];
    i++; // {
    while (i < text.length) {
      const c = text[i];
      if (c === "}") {
        i++;
        return out;
      }
      if (c === ",") {
        i++;
        continue;
      }
      if (c === "{") {
        out.push(read());
        continue;
      }
      if (c === '"') {
        let s = "";
        i++;
        while (text[i] !== '"') {
          if (text[i] === "\\") i++;
          s += text[i++];
        }
        i++;
        out.push(el ? el(s) : s);
        continue;
      }
      let end = i;
      while (text[end] !== "," && text[end] !== "}") end++;
      const raw = text.slice(i, end);
      i = end;
      out.push(raw === "NULL" ? null : el ? el(raw) : raw);
    }
    return out;
  };
  return read();
}

/** Result types asked for in binary format once a statement is described. */
export const BINARY_RESULTS: ReadonlySet<number> = new Set([OID.timestamptz]);

/** 2000-01-01T00:00:00Z, PostgreSQL's epoch, in Unix milliseconds. */
const PG_EPOCH_MS = 946_684_800_000;

/**
 * A timestamptz in binary format (microseconds since 2000-01-01 UTC, a
 * big-endian int64) as a Date: the same Date the text form gives, that is
 * truncated to the millisecond (floored: earlier instants stay earlier), and
 * an invalid Date for infinity and -infinity.
 */
export function timestamptzFromBinary(view: DataView, at: number): Date {
  const hi = view.getInt32(at);
  const lo = view.getUint32(at + 4);
  // Within ±2^53 µs (years 1715 to 2285) the number is exact; beyond, BigInt.
  if (hi >= -0x200000 && hi < 0x200000) {
    return new Date(Math.floor((hi * 4294967296 + lo) / 1000) + PG_EPOCH_MS);
  }
  if ((hi === 0x7fffffff && lo === 0xffffffff) || (hi === -0x80000000 && lo === 0)) {
    return new Date(NaN); // infinity, -infinity: what new Date("infinity") gives
  }
  const us = (BigInt(hi) << 32n) | BigInt(lo);
  let ms = us / 1000n; // truncates toward zero
  if (us < 0n && ms * 1000n !== us) ms -= 1n;
  return new Date(Number(ms) + PG_EPOCH_MS);
}

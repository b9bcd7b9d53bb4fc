/**
 * What a connection receives: the read buffer, the framing of the server's messages (each type's
 * length checked before anything is allocated for it), and the decoding of RowDescription and
 * DataRow into result rows (protocol 3.0, protocol-message-formats.html).
 */
import { PgConnectionError } from "./errors.ts";
import { BINARY_RESULTS, parserFor, timestamptzFromBinary } from "./types.ts";
import * as wire from "./wire.ts";

/** A result row. */
export type Row = Record<string, unknown>;

/** A column's parser (types.ts), or undefined: the text as it came. */
export type Parser = ((s: string) => unknown) | undefined;

/**
 * The longest message accepted from the server (its length field, in bytes), for the kinds that
 * carry data: DataRow, RowDescription, ErrorResponse, NoticeResponse. A longer one closes the
 * connection (PROTOCOL_ERROR) instead of allocating what a broken or hostile server announces.
 */
export const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

/** The longest of the other messages (libpq's limit for them). */
const MAX_SHORT_MESSAGE_BYTES = 30_000;

/** Per message type: the shortest and the longest length field accepted; unknown types: none. */
const MIN_LENGTH = new Int32Array(256).fill(0x7fffffff);
const MAX_LENGTH = new Int32Array(256);
for (
  const [type, min, max] of [
    ["D", 6, MAX_MESSAGE_BYTES], // DataRow: column count, then the columns
    ["T", 6, MAX_MESSAGE_BYTES], // RowDescription
    ["E", 5, MAX_MESSAGE_BYTES], // ErrorResponse: fields, then a NUL
    ["N", 5, MAX_MESSAGE_BYTES], // NoticeResponse
    ["Z", 5, 5], // ReadyForQuery: the transaction status
    ["1", 4, 4], // ParseComplete
    ["2", 4, 4], // BindComplete
    ["3", 4, 4], // CloseComplete
    ["n", 4, 4], // NoData
    ["I", 4, 4], // EmptyQueryResponse
    ["s", 4, 4], // PortalSuspended
    ["K", 12, 12], // BackendKeyData (protocol 3.0): process id, secret key
    ["C", 5, MAX_SHORT_MESSAGE_BYTES], // CommandComplete: a tag
    ["S", 6, MAX_SHORT_MESSAGE_BYTES], // ParameterStatus: two strings
    ["A", 10, MAX_SHORT_MESSAGE_BYTES], // NotificationResponse
    ["R", 8, MAX_SHORT_MESSAGE_BYTES], // Authentication*: a code, then its data
    ["t", 6, 6 + 4 * 65535], // ParameterDescription: up to 65535 type OIDs
  ] as const
) {
  MIN_LENGTH[type.charCodeAt(0)] = min;
  MAX_LENGTH[type.charCodeAt(0)] = max;
}

/**
 * The bytes read from the server and not yet handled. Messages are handled in place:
 * `buf[start, end)` of the callback is one message's body, valid until the callback returns.
 */
export class Inbox {
  buf = new Uint8Array(64 * 1024);
  view = new DataView(this.buf.buffer);
  #start = 0;
  #end = 0;

  /** Where the next read goes (the buffer is compacted or grown when it is full). */
  space(): Uint8Array {
    if (this.#end === this.buf.length) this.#makeRoom(1);
    return this.buf.subarray(this.#end);
  }

  /**
   * Takes `n` bytes read into space(), then hands each complete message to `handle` (its type
   * and its body's bounds), in order, while `handle` returns true. Returns the error that ends
   * the connection when a message has an unknown type or an impossible length, else null.
   */
  received(
    n: number,
    handle: (type: number, start: number, end: number) => boolean,
  ): PgConnectionError | null {
    this.#end += n;
    let at = this.#start;
    while (this.#end - at >= 5) {
      const type = this.buf[at];
      const len = this.view.getInt32(at + 1);
      // Checked before anything is allocated or read for it (a length of -1 would never advance).
      if (len < MIN_LENGTH[type] || len > MAX_LENGTH[type]) return badFrame(type, len);
      if (this.#end - at < len + 1) {
        // an incomplete message: make sure the buffer can hold all of it
        this.#start = at;
        if (this.#start + len + 1 > this.buf.length) this.#makeRoom(len + 1 - (this.#end - at));
        return null;
      }
      if (!handle(type, at + 5, at + 1 + len)) return null;
      at += len + 1;
    }
    if (at === this.#end) {
      this.#start = 0;
      this.#end = 0;
    } else this.#start = at;
    return null;
  }

  /** Makes room for `need` more bytes after #end (compacting, then growing). */
  #makeRoom(need: number): void {
    const used = this.#end - this.#start;
    if (this.#start > 0) {
      this.buf.copyWithin(0, this.#start, this.#end);
      this.#start = 0;
      this.#end = used;
    }
    if (this.buf.length - this.#end < need) {
      let size = this.buf.length * 2;
      while (size - used < need) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.buf.subarray(0, used));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
  }
}

/** A message of an unknown type or an impossible length: the connection cannot go on. */
export function badFrame(type: number, len: number): PgConnectionError {
  const name = JSON.stringify(String.fromCharCode(type));
  return new PgConnectionError(
    "PROTOCOL_ERROR",
    MAX_LENGTH[type] === 0
      ? `unexpected message ${name} from PostgreSQL (COPY, LISTEN/NOTIFY and function calls ` +
        `are not supported)`
      : `PostgreSQL sent a ${name} message with length ${len}, outside ${MIN_LENGTH[type]}..${
        MAX_LENGTH[type]
      }: closing the connection`,
  );
}

/** A message whose content does not match its length: the connection cannot go on. */
export function malformed(type: string): PgConnectionError {
  return new PgConnectionError(
    "PROTOCOL_ERROR",
    `PostgreSQL sent a malformed "${type}" message: closing the connection`,
  );
}

/** The columns a RowDescription announces. */
export interface Columns {
  names: string[];
  parsers: Parser[];
  /** Result format codes (1: binary, types.ts BINARY_RESULTS), or null: all text. */
  formats: Uint8Array | null;
}

/** Reads a RowDescription body; null when it is malformed. */
export function readColumns(
  buf: Uint8Array,
  view: DataView,
  start: number,
  end: number,
): Columns | null {
  const n = view.getInt16(start);
  const names = new Array<string>(n);
  const parsers = new Array<Parser>(n);
  let formats: Uint8Array | null = null;
  let at = start + 2;
  for (let i = 0; i < n; i++) {
    const [name, next] = wire.cstringAt(buf, at, end);
    if (next + 18 > end) return null;
    names[i] = name;
    const oid = view.getInt32(next + 6);
    parsers[i] = parserFor(oid);
    if (BINARY_RESULTS.has(oid)) (formats ??= new Uint8Array(n))[i] = 1;
    at = next + 18;
  }
  if (at !== end || n < 0) return null;
  return { names, parsers, formats };
}

/**
 * Reads a DataRow body into a row of `names`, each value parsed (or, where `formats` says 1,
 * decoded from binary); null when the message is malformed.
 */
export function readRow(
  buf: Uint8Array,
  view: DataView,
  start: number,
  end: number,
  names: string[],
  parsers: Parser[],
  formats: Uint8Array | null,
): Row | null {
  const n = view.getInt16(start);
  const row: Row = {};
  let at = start + 2;
  for (let i = 0; i < n; i++) {
    const len = view.getInt32(at);
    at += 4;
    if (len < 0) {
      row[names[i]] = null;
      continue;
    }
    if (formats !== null && formats[i] === 1) {
      row[names[i]] = timestamptzFromBinary(view, at); // the only binary type asked for
      at += len;
      continue;
    }
    const text = wire.utf8(buf, at, at + len);
    at += len;
    const p = parsers[i];
    row[names[i]] = p === undefined ? text : p(text);
  }
  if (at !== end || n !== names.length) return null;
  return row;
}

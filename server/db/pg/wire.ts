/**
 * PostgreSQL frontend/backend protocol 3.0: the bytes of the messages this
 * client sends, and the reading helpers for the ones it receives
 * (https://www.postgresql.org/docs/current/protocol-message-formats.html).
 *
 * Messages are appended to one growable buffer per connection, so the
 * queries of one event-loop turn leave in a single socket write.
 */

const encoder = new TextEncoder();

/** A growable buffer of outgoing messages. */
export class Writer {
  #buf = new Uint8Array(4096);
  #view = new DataView(this.#buf.buffer);
  #at = 0;

  /** Bytes written and not yet taken. */
  get length(): number {
    return this.#at;
  }

  #ensure(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#at + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#at));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }

  byte(b: number): this {
    this.#ensure(1);
    this.#buf[this.#at++] = b;
    return this;
  }

  int16(n: number): this {
    this.#ensure(2);
    this.#view.setInt16(this.#at, n);
    this.#at += 2;
    return this;
  }

  int32(n: number): this {
    this.#ensure(4);
    this.#view.setInt32(this.#at, n);
    this.#at += 4;
    return this;
  }

  bytes(b: Uint8Array): this {
    this.#ensure(b.length);
    this.#buf.set(b, this.#at);
    this.#at += b.length;
    return this;
  }

  /** UTF-8 text without a terminator; returns its byte length. */
  text(s: string): number {
    // Worst case 3 bytes per UTF-16 unit; encodeInto writes in place.
    this.#ensure(s.length * 3);
    const { written } = encoder.encodeInto(s, this.#buf.subarray(this.#at));
    this.#at += written;
    return written;
  }

  /** UTF-8 text and a NUL byte (a protocol "String"). */
  cstring(s: string): this {
    this.text(s);
    return this.byte(0);
  }

  /** Starts a message of `type` (a letter, or "" for the untyped startup messages). */
  begin(type: string): number {
    if (type) this.byte(type.charCodeAt(0));
    const at = this.#at;
    this.int32(0); // length, filled in by end()
    return at;
  }

  /** Overwrites four bytes already written at `at`. */
  setInt32At(at: number, n: number): void {
    this.#view.setInt32(at, n);
  }

  /** Writes the length of the message begun at `at`. */
  end(at: number): void {
    this.#view.setInt32(at, this.#at - at);
  }

  /** A field of Bind: its length then its bytes, or -1 for NULL. */
  param(v: string | Uint8Array | null): void {
    if (v === null) {
      this.int32(-1);
      return;
    }
    const at = this.#at;
    this.int32(0);
    const n = typeof v === "string" ? this.text(v) : (this.bytes(v), v.length);
    this.#view.setInt32(at, n);
  }

  /** Hands out the bytes written so far and starts over. */
  take(): Uint8Array {
    const out = this.#buf.slice(0, this.#at);
    this.#at = 0;
    if (this.#buf.length > 1 << 20) {
      // a huge batch should not pin its buffer for the life of the connection
      this.#buf = new Uint8Array(4096);
      this.#view = new DataView(this.#buf.buffer);
    }
    return out;
  }
}

/** StartupMessage (protocol 3.0) with its parameters. */
export function startupMessage(w: Writer, params: Record<string, string>): void {
  const at = w.begin("");
  w.int32(196608);
  for (const [k, v] of Object.entries(params)) w.cstring(k).cstring(v);
  w.byte(0);
  w.end(at);
}

/** SSLRequest. */
export function sslRequest(w: Writer): void {
  w.int32(8).int32(80877103);
}

/** PasswordMessage / SASL responses: a "p" message with the given body. */
export function passwordMessage(w: Writer, body: string | Uint8Array): void {
  const at = w.begin("p");
  if (typeof body === "string") w.cstring(body);
  else w.bytes(body);
  w.end(at);
}

/** SASLInitialResponse. */
export function saslInitial(w: Writer, mechanism: string, data: string): void {
  const at = w.begin("p");
  w.cstring(mechanism);
  const lenAt = w.length;
  w.int32(0);
  const n = w.text(data);
  w.end(at);
  w.setInt32At(lenAt, n); // the inner length counts the data only
}

/** Parse: a named prepared statement with the parameter type OIDs (0 = let the server infer). */
export function parse(w: Writer, name: string, text: string, types: number[]): void {
  const at = w.begin("P");
  w.cstring(name).cstring(text).int16(types.length);
  for (const t of types) w.int32(t);
  w.end(at);
}

/** Describe of a prepared statement ("S") or a portal ("P"). */
export function describe(w: Writer, kind: "S" | "P", name: string): void {
  const at = w.begin("D");
  w.byte(kind.charCodeAt(0)).cstring(name);
  w.end(at);
}

/**
 * Bind to the unnamed portal; every parameter in text format, the results in text format or,
 * given `formats` (one code per result column: 0 text, 1 binary), in those.
 */
export function bind(
  w: Writer,
  statement: string,
  values: (string | null)[],
  formats: Uint8Array | null = null,
): void {
  const at = w.begin("B");
  w.byte(0).cstring(statement).int16(0).int16(values.length);
  for (const v of values) w.param(v);
  if (formats === null) w.int16(0);
  else {
    w.int16(formats.length);
    for (let i = 0; i < formats.length; i++) w.int16(formats[i]);
  }
  w.end(at);
}

/** Execute the unnamed portal, all rows. */
export function execute(w: Writer): void {
  const at = w.begin("E");
  w.byte(0).int32(0);
  w.end(at);
}

/** Sync: ends the implicit transaction of the messages before it. */
export function sync(w: Writer): void {
  w.byte(0x53).int32(4);
}

/** Close of a prepared statement. */
export function closeStatement(w: Writer, name: string): void {
  const at = w.begin("C");
  w.byte(0x53).cstring(name);
  w.end(at);
}

/** Query (simple protocol): one or more statements without parameters. */
export function simpleQuery(w: Writer, text: string): void {
  const at = w.begin("Q");
  w.cstring(text);
  w.end(at);
}

/** Terminate. */
export function terminate(w: Writer): void {
  w.byte(0x58).int32(4);
}

const decoder = new TextDecoder();

/** UTF-8 text of `buf[start, end)`; short ASCII runs skip the decoder call. */
export function utf8(buf: Uint8Array, start: number, end: number): string {
  const n = end - start;
  if (n <= 48) {
    let s = "";
    for (let i = start; i < end; i++) {
      const c = buf[i];
      if (c > 0x7f) return decoder.decode(buf.subarray(start, end));
      s += String.fromCharCode(c);
    }
    return s;
  }
  return decoder.decode(buf.subarray(start, end));
}

/**
 * A NUL-terminated string at `at`; returns it and the offset after the NUL. The string ends at
 * `limit` at the latest (the end of its message): without a NUL before it, the offset returned
 * is past `limit`, which the caller takes for a malformed message.
 */
export function cstringAt(buf: Uint8Array, at: number, limit = buf.length): [string, number] {
  let end = at;
  while (end < limit && buf[end] !== 0) end++;
  return [utf8(buf, at, end), end + 1];
}

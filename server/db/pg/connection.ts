/**
 * One connection to PostgreSQL over Deno's own sockets (TCP, Unix, TLS).
 *
 * Every parameterised query is a named prepared statement, parsed once per
 * connection (the statement cache is bounded; the least recently used is
 * closed on the server). Queries are pipelined: each is Bind/Execute/Sync
 * (Parse/Describe first when new) appended to the write buffer, and the
 * buffer leaves in one write per event-loop turn, or as soon as the previous
 * write is done; the answers come back in order and each query's Sync ends
 * its own implicit transaction, so one failing query never affects the
 * others on the connection.
 */
import { Buffer } from "node:buffer";
import { isIP } from "node:net";
import { Duplex } from "node:stream";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { md5Password, Scram } from "./auth.ts";
import { errorFields, PgAbortError, PgConnectionError, PgError } from "./errors.ts";
import { type AuthMethod, type ConnectOptions, isLocalHost } from "./options.ts";
import { BINARY_RESULTS, paramType, parserFor, serialize, timestamptzFromBinary } from "./types.ts";
import * as wire from "./wire.ts";

/** A result row. */
export type Row = Record<string, unknown>;

/**
 * Whom a query works for (an HTTP request): the query is given up when `deadline` passes or,
 * once it has waited a while, when `gone()` says nobody waits for the answer any more.
 */
export interface QueryScope {
  /** performance.now() after which the answer is of no use. */
  readonly deadline: number;
  /** Whether whoever waits has gone away (asked only of queries that wait long). */
  gone(): boolean;
}

/** Statements kept prepared per connection. */
export const STATEMENT_CACHE_SIZE = 500;

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

/** What a connection reads from and writes to: a Deno socket, or TLS without verification. */
interface Socket {
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  close(): void;
}

/** A connection's startup: resolves on the first ReadyForQuery. */
interface Startup {
  resolve: () => void;
  reject: (e: unknown) => void;
  opts: ConnectOptions;
}

/** TLS on a connection: none, encrypted without a verified certificate, or verified. */
type TlsState = "none" | "unverified" | "verified";

/** Options whose clear-text warning was given. */
const warned = new WeakSet<ConnectOptions>();

interface Statement {
  name: string;
  key: string;
  /** Column names and parsers, once the server described the statement. */
  names: string[] | null;
  parsers: (((s: string) => unknown) | undefined)[];
  /** Result format codes once described (1: binary, types.ts BINARY_RESULTS), or null: all text. */
  formats: Uint8Array | null;
  /** The Parse of this statement failed: the error every query of it gets. */
  failed: unknown;
}

interface Pending {
  statement: Statement | null;
  /** This query carried the statement's Parse. */
  parses: boolean;
  /** Columns of a simple query's current result. */
  names: string[] | null;
  parsers: (((s: string) => unknown) | undefined)[];
  /** The result formats this execution asked for (null: all text). */
  formats: Uint8Array | null;
  rows: Row[];
  error: unknown;
  sentAt: number;
  scope: QueryScope | undefined;
  /** Given up (its caller already has an error): the answer is dropped when it comes. */
  abandoned: boolean;
  resolve: (rows: Row[]) => void;
  reject: (e: unknown) => void;
}

/** A ready connection. */
export class Connection {
  readonly #conn: Socket;
  readonly #w = new wire.Writer();
  #buf = new Uint8Array(64 * 1024);
  #view = new DataView(this.#buf.buffer);
  #start = 0;
  #end = 0;
  #pending: (Pending | undefined)[] = [];
  #head = 0;
  #statements = new Map<string, Statement>();
  #statementSeq = 0;
  #writing = false;
  #flushQueued = false;
  #closed = false;
  #closeError: PgConnectionError | null = null;
  #readDone: Promise<void> = Promise.resolve();
  /** Startup: resolves on the first ReadyForQuery. */
  #startup: Startup | null = null;
  #scram: Scram | null = null;
  /** SCRAM progress: 0 not begun, 1 first message sent, 2 final message sent, 3 server verified. */
  #scramStep = 0;
  /** The password method the server asked for and got ("none" until one is asked). */
  #authMethod: AuthMethod = "none";
  #tls: TlsState = "none";
  /** Transaction status of the last ReadyForQuery: I idle, T in a transaction, E failed one. */
  txStatus = "I";
  /** Server parameters (server_version, TimeZone, ...). */
  readonly parameters = new Map<string, string>();
  /** Called once when the connection fails or closes. */
  onClose: (e: PgConnectionError) => void = () => {};
  /** Called whenever a query finished. */
  onIdle: () => void = () => {};
  /** Called when a query with a scope is sent (the pool watches its deadline and its caller). */
  onScoped: ((sentAt: number, scope: QueryScope) => void) | null = null;
  /** Pool bookkeeping. */
  reserved = false;
  draining = false;
  /** A CancelRequest was sent for this connection: it takes no new queries and closes once idle. */
  retired = false;
  lastUsed = performance.now();
  #opts: ConnectOptions | null = null;
  /** BackendKeyData: what a CancelRequest names. */
  #backendPid = 0;
  #backendSecret = 0;
  #cancelled: Promise<void> | null = null;

  private constructor(conn: Socket) {
    this.#conn = conn;
  }

  /**
   * Opens, negotiates TLS as `sslmode` says, authenticates; rejects with PgConnectionError or
   * PgError. After `connectTimeoutMs` it rejects with CONNECT_TIMEOUT and whatever is still under
   * way (the dial, the TLS handshake, the authentication) is aborted, or closed as soon as it
   * completes: a connection that comes through late is never left open and owned by nobody.
   */
  static async open(opts: ConnectOptions): Promise<Connection> {
    const timedOut = new PgConnectionError(
      "CONNECT_TIMEOUT",
      `connection to ${where(opts)} timed out after ${opts.connectTimeoutMs} ms`,
    );
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort(timedOut);
        reject(timedOut);
      }, opts.connectTimeoutMs);
    });
    const attempt = Connection.#connect(opts, abort.signal);
    attempt.catch(() => {}); // after a timeout, its own failure is nobody's business
    try {
      const c = await Promise.race([timeout, attempt]);
      c.#warnIfClear(opts);
      return c;
    } catch (e) {
      throw asConnectionError(e, opts);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The attempts `sslmode` calls for (libpq: allow tries TLS after a refusal, prefer plain). */
  static async #connect(opts: ConnectOptions, signal: AbortSignal): Promise<Connection> {
    if (opts.ssl === "disable" || opts.host.startsWith("/")) {
      return await Connection.#attempt(opts, false, signal);
    }
    if (opts.ssl === "allow" || opts.ssl === "prefer") {
      const tlsFirst = opts.ssl === "prefer";
      const used = { tls: false };
      let first: unknown;
      try {
        return await Connection.#attempt(opts, tlsFirst, signal, used);
      } catch (e) {
        // Again the other way when the server refused (an ErrorResponse) the first way, or the
        // TLS handshake failed; not after a timeout or a failure to reach the server, and not
        // when prefer's server turned TLS down (the plain connection was just tried).
        const retry = tlsFirst === used.tls &&
          (e instanceof PgError || (e instanceof PgConnectionError && e.code === "TLS_FAILED"));
        if (!retry || signal.aborted) throw e;
        first = e;
      }
      try {
        return await Connection.#attempt(opts, !tlsFirst, signal);
      } catch (e) {
        // The error that explains: prefer's server refusal over TLS (a wrong password) rather
        // than the clear retry's; allow's refusal in clear when the server has no TLS at all.
        const tlsError = e instanceof PgConnectionError && e.code.startsWith("TLS_");
        throw (tlsFirst && first instanceof PgError) || (!tlsFirst && tlsError) ? first : e;
      }
    }
    return await Connection.#attempt(opts, true, signal);
  }

  /** One connection attempt, closed whenever `signal` aborts before it is ready. */
  static async #attempt(
    opts: ConnectOptions,
    tls: boolean,
    signal: AbortSignal,
    used = { tls: false },
  ): Promise<Connection> {
    let conn: Socket | undefined;
    let c: Connection | undefined;
    const cancel = () => {
      if (c) c.#fail(signal.reason);
      else closeQuietly(conn);
    };
    signal.addEventListener("abort", cancel, { once: true });
    try {
      conn = await dial(opts, signal);
      if (signal.aborted) throw signal.reason; // the dial completed after the timeout
      let state: TlsState = "none";
      if (tls) {
        used.tls = true;
        const secured = await negotiateTls(conn as Deno.TcpConn, opts, (tls) => conn = tls);
        conn = secured.conn;
        state = secured.state;
        used.tls = state !== "none";
        if (signal.aborted) throw signal.reason; // the handshake completed after the timeout
      }
      c = new Connection(conn);
      c.#tls = state;
      await c.#begin(opts);
      return c;
    } catch (e) {
      if (c) c.#fail(asConnectionError(e, opts));
      else closeQuietly(conn);
      throw e;
    } finally {
      signal.removeEventListener("abort", cancel);
    }
  }

  /** Tells `opts.warn`, once per options, when this connection sends credentials in clear. */
  #warnIfClear(opts: ConnectOptions): void {
    if (this.#tls !== "none" || !opts.password || isLocalHost(opts.host) || warned.has(opts)) {
      return;
    }
    warned.add(opts);
    const warn = opts.warn ?? ((m: string) => console.warn(m));
    warn(
      `the connection to PostgreSQL at ${where(opts)} is not encrypted (sslmode=${opts.ssl}): ` +
        `the user name and the password exchange travel in clear; ` +
        `use sslmode=verify-full with sslrootcert (a CA file, or system)`,
    );
  }

  /** Queries sent and not yet answered. */
  get inflight(): number {
    return this.#pending.length - this.#head;
  }

  /** When the oldest unanswered query was sent (performance.now), or null. */
  get oldestSentAt(): number | null {
    return this.inflight ? this.#pending[this.#head]!.sentAt : null;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Whether queries are buffered for a write that has not happened yet (this tick's batch). */
  get batching(): boolean {
    return this.#flushQueued || this.#writing;
  }

  /** Runs one statement with parameters; rows come back parsed (types.ts). */
  query(text: string, params: readonly unknown[] = [], scope?: QueryScope): Promise<Row[]> {
    if (this.#closed) return Promise.reject(this.#closeError);
    if (scope !== undefined && performance.now() >= scope.deadline) {
      return Promise.reject(new PgAbortError("DEADLINE"));
    }
    // Serialise first: a value that cannot be sent throws before any byte is written.
    const values = new Array<string | null>(params.length);
    let typed = false;
    const types = new Array<number>(params.length);
    for (let i = 0; i < params.length; i++) {
      values[i] = serialize(params[i]);
      types[i] = paramType(params[i]);
      if (types[i] !== 0) typed = true;
    }
    const key = typed ? `${text}\u0000${types.join(",")}` : text;
    if (this.#opts!.unnamedStatements) return this.#queryUnnamed(text, key, values, types, scope);
    let st = this.#statements.get(key);
    let parses = false;
    if (st === undefined) {
      st = {
        name: `s${++this.#statementSeq}`,
        key,
        names: null,
        parsers: [],
        formats: null,
        failed: null,
      };
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) {
        const oldest = this.#statements.values().next().value!;
        this.#statements.delete(oldest.key);
        wire.closeStatement(this.#w, oldest.name);
      }
      this.#statements.set(key, st);
      wire.parse(this.#w, st.name, text, types);
      wire.describe(this.#w, "S", st.name);
      parses = true;
    } else if (st.failed !== null) {
      return Promise.reject(st.failed);
    }
    // The first execution, sent with the Parse, asks for text: the column types are not known yet.
    const formats = st.names !== null ? st.formats : null;
    wire.bind(this.#w, st.name, values, formats);
    wire.execute(this.#w);
    wire.sync(this.#w);
    return this.#enqueue(st, parses, formats, scope);
  }

  /**
   * A query for a transaction pooler (PgBouncer, Supavisor): the unnamed statement, parsed for
   * this execution only (Parse, Bind, Describe portal, Execute, Sync: libpq's PQexecParams), so
   * nothing outlives the implicit transaction; results in text.
   */
  #queryUnnamed(
    text: string,
    key: string,
    values: (string | null)[],
    types: number[],
    scope: QueryScope | undefined,
  ): Promise<Row[]> {
    const st: Statement = { name: "", key, names: null, parsers: [], formats: null, failed: null };
    wire.parse(this.#w, "", text, types);
    wire.bind(this.#w, "", values, null);
    wire.describe(this.#w, "P", "");
    wire.execute(this.#w);
    wire.sync(this.#w);
    return this.#enqueue(st, true, null, scope);
  }

  /** Runs statements without parameters (simple protocol: several may be sent at once). */
  simple(text: string, scope?: QueryScope): Promise<Row[]> {
    if (this.#closed) return Promise.reject(this.#closeError);
    if (scope !== undefined && performance.now() >= scope.deadline) {
      return Promise.reject(new PgAbortError("DEADLINE"));
    }
    wire.simpleQuery(this.#w, text);
    return this.#enqueue(null, false, null, scope);
  }

  /**
   * Gives up the queries whose scope ended: the deadline passed, or (for those in flight longer
   * than `watchAfterMs`) the caller has gone. Each gets a PgAbortError now; when the one
   * PostgreSQL is running is among them, a CancelRequest stops it. Returns how many were given up.
   */
  expire(now: number, watchAfterMs: number): number {
    let n = 0;
    for (let i = this.#head; i < this.#pending.length; i++) {
      const q = this.#pending[i]!;
      const s = q.scope;
      if (s === undefined || q.abandoned) continue;
      let why: PgAbortError | null = null;
      if (now >= s.deadline) why = new PgAbortError("DEADLINE");
      else if (now - q.sentAt >= watchAfterMs && s.gone()) why = new PgAbortError("CLIENT_GONE");
      if (why === null) continue;
      q.abandoned = true;
      q.reject(why);
      n++;
      if (i === this.#head) void this.cancel();
    }
    return n;
  }

  /**
   * When the unanswered queries with a scope must be looked at next (performance.now): the
   * earliest of their deadlines, of `watchAfterMs` after each was sent, and for one already older
   * than that (its caller is asked again and again whether it has gone) `everyMs` from `now`.
   * Infinity when there is none.
   */
  nextWatch(now: number, watchAfterMs: number, everyMs: number): number {
    let due = Infinity;
    for (let i = this.#head; i < this.#pending.length; i++) {
      const q = this.#pending[i]!;
      const s = q.scope;
      if (s === undefined || q.abandoned) continue;
      const ask = q.sentAt + watchAfterMs;
      due = Math.min(due, s.deadline, ask > now ? ask : now + everyMs);
    }
    return due;
  }

  /** Whether a CancelRequest was sent for this connection. */
  get cancelSent(): boolean {
    return this.#cancelled !== null;
  }

  /**
   * Asks PostgreSQL to cancel what this connection's backend runs now (a CancelRequest with the
   * backend's PID and secret key, on a connection of its own). The connection is retired: a late
   * cancel could hit a later statement, so it takes no new queries and closes once idle.
   */
  cancel(): Promise<void> {
    if (this.#cancelled) return this.#cancelled;
    this.retired = true;
    const opts = this.#opts;
    this.#cancelled = opts && this.#backendPid !== 0
      ? sendCancel(opts, this.#tls !== "none", this.#backendPid, this.#backendSecret)
      : Promise.resolve();
    return this.#cancelled;
  }

  /** Forgets a prepared statement (after "cached plan must not change result type"). */
  forget(text: string): void {
    for (const [key, st] of this.#statements) {
      if (key === text || key.startsWith(`${text}\u0000`)) {
        this.#statements.delete(key);
        if (!this.#closed) wire.closeStatement(this.#w, st.name);
      }
    }
  }

  /** Terminates the connection; in-flight queries fail with CONNECTION_ENDED. */
  async close(): Promise<void> {
    // A cancel goes first: a pooler (PgBouncer) forwards it only while this client is connected.
    await this.#cancelled;
    if (!this.#closed) {
      wire.terminate(this.#w);
      try {
        await this.#conn.write(this.#w.take());
      } catch { /* the server may be gone already */ }
      this.#fail(new PgConnectionError("CONNECTION_ENDED", "the connection was closed"));
    }
    await this.#readDone;
  }

  #enqueue(
    statement: Statement | null,
    parses: boolean,
    formats: Uint8Array | null,
    scope?: QueryScope,
  ): Promise<Row[]> {
    const sentAt = performance.now();
    const answer = new Promise<Row[]>((resolve, reject) => {
      this.#pending.push({
        statement,
        parses,
        names: null,
        parsers: [],
        formats,
        rows: [],
        error: null,
        sentAt,
        scope,
        abandoned: false,
        resolve,
        reject,
      });
      this.#scheduleFlush();
    });
    if (scope !== undefined) this.onScoped?.(sentAt, scope);
    return answer;
  }

  /**
   * Queries go out on the next turn of the event loop (setImmediate), not at the end of this
   * microtask: every request whose handler reaches its query during this turn joins the same
   * write (the pool keeps them on one connection, pool.ts). Fewer, larger writes cost both
   * processes far less than one write and one backend wake-up per query (bench/README.md,
   * "Pipelining").
   */
  #scheduleFlush(): void {
    if (this.#writing || this.#flushQueued) return;
    this.#flushQueued = true;
    setImmediate(() => this.#flush());
  }

  async #flush(): Promise<void> {
    this.#flushQueued = false;
    if (this.#writing || this.#closed) return;
    this.#writing = true;
    try {
      while (this.#w.length > 0 && !this.#closed) {
        const bytes = this.#w.take();
        let off = 0;
        while (off < bytes.length) off += await this.#conn.write(bytes.subarray(off));
      }
    } catch (e) {
      this.#fail(
        new PgConnectionError("CONNECTION_CLOSED", `write to PostgreSQL failed: ${message(e)}`, {
          cause: e,
        }),
      );
    } finally {
      this.#writing = false;
    }
  }

  #begin(opts: ConnectOptions): Promise<void> {
    this.#opts = opts;
    const ready = new Promise<void>((resolve, reject) => {
      this.#startup = { resolve, reject, opts };
    });
    wire.startupMessage(this.#w, opts.params);
    this.#scheduleFlush();
    this.#readDone = this.#readLoop();
    return ready;
  }

  async #readLoop(): Promise<void> {
    let why: PgConnectionError;
    try {
      while (true) {
        if (this.#end === this.#buf.length) this.#makeRoom(1);
        const n = await this.#conn.read(this.#buf.subarray(this.#end));
        if (n === null) {
          why = new PgConnectionError("CONNECTION_CLOSED", "PostgreSQL closed the connection");
          break;
        }
        this.#end += n;
        this.#process();
      }
    } catch (e) {
      why = this.#closed
        ? this.#closeError!
        : new PgConnectionError("CONNECTION_CLOSED", `PostgreSQL connection lost: ${message(e)}`, {
          cause: e,
        });
    }
    this.#fail(why);
  }

  /** Makes room for `need` more bytes after #end (compacting, then growing). */
  #makeRoom(need: number): void {
    const used = this.#end - this.#start;
    if (this.#start > 0) {
      this.#buf.copyWithin(0, this.#start, this.#end);
      this.#start = 0;
      this.#end = used;
    }
    if (this.#buf.length - this.#end < need) {
      let size = this.#buf.length * 2;
      while (size - used < need) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.#buf.subarray(0, used));
      this.#buf = next;
      this.#view = new DataView(next.buffer);
    }
  }

  #process(): void {
    let at = this.#start;
    while (this.#end - at >= 5) {
      const type = this.#buf[at];
      const len = this.#view.getInt32(at + 1);
      // Checked before anything is allocated or read for it (a length of -1 would never advance).
      if (len < MIN_LENGTH[type] || len > MAX_LENGTH[type]) return this.#badFrame(type, len);
      if (this.#end - at < len + 1) {
        // an incomplete message: make sure the buffer can hold all of it
        this.#start = at;
        if (this.#start + len + 1 > this.#buf.length) this.#makeRoom(len + 1 - (this.#end - at));
        return;
      }
      this.#handle(type, at + 5, at + 1 + len);
      if (this.#closed) return;
      at += len + 1;
    }
    if (at === this.#end) {
      this.#start = 0;
      this.#end = 0;
    } else this.#start = at;
  }

  /** A message of an unknown type or an impossible length: the connection cannot go on. */
  #badFrame(type: number, len: number): void {
    const name = JSON.stringify(String.fromCharCode(type));
    this.#fail(
      new PgConnectionError(
        "PROTOCOL_ERROR",
        MAX_LENGTH[type] === 0
          ? `unexpected message ${name} from PostgreSQL (COPY, LISTEN/NOTIFY and function calls ` +
            `are not supported)`
          : `PostgreSQL sent a ${name} message with length ${len}, outside ${MIN_LENGTH[type]}..${
            MAX_LENGTH[type]
          }: closing the connection`,
      ),
    );
  }

  /** A message whose content does not match its length: the connection cannot go on. */
  #malformed(type: string): void {
    this.#fail(
      new PgConnectionError(
        "PROTOCOL_ERROR",
        `PostgreSQL sent a malformed "${type}" message: closing the connection`,
      ),
    );
  }

  #handle(type: number, start: number, end: number): void {
    const q = this.#pending[this.#head];
    switch (type) {
      case 0x44: // D DataRow
        if (q && q.error === null) this.#row(q, start, end);
        return;
      case 0x54: // T RowDescription
        this.#describe(q, start, end);
        return;
      case 0x6e: // n NoData
        if (q?.parses && q.statement) q.statement.names = [];
        return;
      case 0x5a: // Z ReadyForQuery
        this.txStatus = String.fromCharCode(this.#buf[start]);
        if (this.#startup) {
          const s = this.#startup;
          this.#startup = null;
          s.resolve();
          return;
        }
        if (q) this.#finish(q);
        return;
      case 0x45: // E ErrorResponse
        return this.#error(q, new PgError(errorFields(this.#buf, start, end)));
      case 0x31: // 1 ParseComplete
      case 0x32: // 2 BindComplete
      case 0x33: // 3 CloseComplete
      case 0x43: // C CommandComplete
      case 0x49: // I EmptyQueryResponse
      case 0x74: // t ParameterDescription
      case 0x4e: // N NoticeResponse
      case 0x41: // A NotificationResponse
      case 0x73: // s PortalSuspended
        return;
      case 0x53: { // S ParameterStatus
        const [k, next] = wire.cstringAt(this.#buf, start, end);
        const [v, stop] = wire.cstringAt(this.#buf, next, end);
        if (stop !== end) return this.#malformed("S");
        this.parameters.set(k, v);
        return;
      }
      case 0x4b: // K BackendKeyData
        this.#backendPid = this.#view.getInt32(start);
        this.#backendSecret = this.#view.getInt32(start + 4);
        return;
      case 0x52: // R Authentication*
        return this.#auth(start, end);
      default: // not reached: #process refuses unknown types
        this.#badFrame(type, end - start + 4);
    }
  }

  #describe(q: Pending | undefined, start: number, end: number): void {
    const n = this.#view.getInt16(start);
    const names = new Array<string>(n);
    const parsers = new Array<((s: string) => unknown) | undefined>(n);
    let formats: Uint8Array | null = null;
    let at = start + 2;
    for (let i = 0; i < n; i++) {
      const [name, next] = wire.cstringAt(this.#buf, at, end);
      if (next + 18 > end) return this.#malformed("T");
      names[i] = name;
      const oid = this.#view.getInt32(next + 6);
      parsers[i] = parserFor(oid);
      if (BINARY_RESULTS.has(oid)) (formats ??= new Uint8Array(n))[i] = 1;
      at = next + 18;
    }
    if (at !== end || n < 0) return this.#malformed("T");
    if (!q) return;
    if (q.statement && q.parses) {
      q.statement.names = names;
      q.statement.parsers = parsers;
      q.statement.formats = formats;
    } else if (!q.statement) {
      q.names = names;
      q.parsers = parsers;
    }
  }

  #row(q: Pending, start: number, end: number): void {
    const st = q.statement;
    const names = st ? st.names : q.names;
    const parsers = st ? st.parsers : q.parsers;
    if (!names) return;
    const buf = this.#buf;
    const view = this.#view;
    const formats = q.formats;
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
    if (at !== end || n !== names.length) return this.#malformed("D");
    q.rows.push(row);
  }

  #error(q: Pending | undefined, err: PgError): void {
    if (this.#startup) {
      const s = this.#startup;
      this.#startup = null;
      s.reject(err);
      return;
    }
    if (!q) {
      // A FATAL error outside any query (administrator shutdown, idle timeout): the server
      // closes the connection next.
      this.#fail(
        new PgConnectionError(
          "CONNECTION_CLOSED",
          `PostgreSQL ended the connection: ${err.message}`,
          {
            cause: err,
          },
        ),
      );
      return;
    }
    if (q.error !== null) return;
    const st = q.statement;
    if (st && q.parses && st.names === null) {
      // The Parse itself failed: the statement does not exist on the server.
      st.failed = err;
      this.#statements.delete(st.key);
    }
    // A query pipelined behind a failed Parse gets that error, not "statement does not exist".
    q.error = st && st.failed !== null && !q.parses ? st.failed : err;
  }

  #finish(q: Pending): void {
    this.#pending[this.#head++] = undefined;
    if (this.#head === this.#pending.length) {
      this.#pending.length = 0;
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#head);
      this.#head = 0;
    }
    this.lastUsed = performance.now();
    if (q.abandoned) {
      // Its caller has its error already. The next one may be given up too: stop it as well.
      const next = this.#pending[this.#head];
      if (next?.abandoned) void this.cancel();
    } else if (q.error !== null) q.reject(q.error);
    else q.resolve(q.rows);
    this.onIdle();
  }

  /**
   * Authentication, as the server asks and `require_auth` allows. AuthenticationOk counts only
   * once a SCRAM exchange that began has ended with the server's signature verified: a server
   * that does not know the password cannot skip its proof.
   */
  #auth(start: number, end: number): void {
    const s = this.#startup;
    if (!s) return;
    const code = this.#view.getInt32(start);
    const { user, password } = s.opts;
    const need = (what: string) => {
      if (!password) {
        throw new PgConnectionError(
          "AUTH_FAILED",
          `PostgreSQL asks for a ${what} password for user "${user}" and DATABASE_URL has none`,
        );
      }
    };
    const text = () => new TextDecoder().decode(this.#buf.subarray(start + 4, end));
    try {
      switch (code) {
        case 0: // AuthenticationOk
          if (end - start !== 4) throw malformedAuth();
          if (this.#scramStep === 1 || this.#scramStep === 2) {
            throw new PgConnectionError(
              "AUTH_FAILED",
              `PostgreSQL at ${where(s.opts)} accepted the connection before completing ` +
                `SCRAM-SHA-256: the server did not prove that it knows the password`,
            );
          }
          if (this.#authMethod === "none") this.#allow("none", s.opts);
          return;
        case 3: // clear text
          if (end - start !== 4) throw malformedAuth();
          this.#allow("password", s.opts);
          need("clear-text");
          wire.passwordMessage(this.#w, password);
          break;
        case 5: // MD5 with a 4-byte salt
          if (end - start !== 8) throw malformedAuth();
          this.#allow("md5", s.opts);
          need("MD5");
          wire.passwordMessage(
            this.#w,
            md5Password(user, password, this.#buf.slice(start + 4, start + 8)),
          );
          break;
        case 10: { // SASL: a list of mechanisms
          if (this.#scramStep !== 0 || this.#authMethod !== "none") throw outOfOrder("SASL");
          const mechanisms: string[] = [];
          let at = start + 4;
          while (at < end && this.#buf[at] !== 0) {
            const [m, next] = wire.cstringAt(this.#buf, at, end);
            mechanisms.push(m);
            at = next;
          }
          if (at !== end - 1) throw malformedAuth();
          if (!mechanisms.includes("SCRAM-SHA-256")) {
            throw new PgConnectionError(
              "AUTH_FAILED",
              `PostgreSQL offers only ${mechanisms.join(", ")}; SCRAM-SHA-256 is supported`,
            );
          }
          this.#allow("scram-sha-256", s.opts);
          need("SCRAM-SHA-256");
          this.#scram = new Scram(password);
          wire.saslInitial(this.#w, "SCRAM-SHA-256", this.#scram.first());
          this.#scramStep = 1;
          break;
        }
        case 11: { // SASLContinue: the server-first-message; the key is derived off the event loop
          if (this.#scramStep !== 1) throw outOfOrder("SASLContinue");
          this.#scramStep = 2;
          this.#scram!.final(text()).then((answer) => {
            if (this.#startup !== s || this.#closed) return;
            wire.passwordMessage(this.#w, new TextEncoder().encode(answer));
            this.#scheduleFlush();
          }, (e) => this.#authFailed(s, e));
          return;
        }
        case 12: // SASLFinal
          if (this.#scramStep !== 2) throw outOfOrder("SASLFinal");
          this.#scram!.verify(text());
          this.#scram = null;
          this.#scramStep = 3;
          return;
        default:
          throw new PgConnectionError(
            "AUTH_FAILED",
            `PostgreSQL asks for an authentication method this client does not support (${code})`,
          );
      }
      this.#scheduleFlush();
    } catch (e) {
      this.#authFailed(s, e);
    }
  }

  #authFailed(s: Startup, e: unknown): void {
    if (this.#startup !== s) return;
    this.#startup = null;
    s.reject(
      e instanceof PgConnectionError
        ? e
        : new PgConnectionError("AUTH_FAILED", message(e), { cause: e }),
    );
  }

  /**
   * Throws unless `method` may be used: as `require_auth` says, else SCRAM-SHA-256 or none
   * anywhere, and a clear-text or MD5 password only over a Unix socket or verified TLS.
   */
  #allow(method: AuthMethod, opts: ConnectOptions): void {
    if (method !== "none") this.#authMethod = method;
    const ra = opts.requireAuth;
    const ok = ra
      ? ra.methods.has(method) !== ra.negated
      : (method !== "password" && method !== "md5") || this.#tls === "verified" ||
        opts.host.startsWith("/");
    if (ok) return;
    const asked = {
      none: "accepted the connection without authentication",
      password: "asks for a clear-text password",
      md5: "asks for an MD5 password",
      "scram-sha-256": "asks for SCRAM-SHA-256",
      gss: "asks for GSSAPI",
      sspi: "asks for SSPI",
    }[method];
    const why = ra
      ? `require_auth does not allow "${method}"`
      : `${method === "md5" ? "an MD5" : "a clear-text"} password is sent only over a Unix ` +
        `socket or TLS with a verified certificate (sslmode=verify-ca or verify-full); ` +
        `require_auth=${method} allows it anyway`;
    throw new PgConnectionError(
      "AUTH_NOT_ALLOWED",
      `PostgreSQL at ${where(opts)} ${asked}: refused, ${why}`,
    );
  }

  #fail(e: PgConnectionError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeError = e;
    try {
      this.#conn.close();
    } catch { /* already closed */ }
    if (this.#startup) {
      const s = this.#startup;
      this.#startup = null;
      s.reject(e);
    }
    const pending = this.#pending.slice(this.#head);
    this.#pending = [];
    this.#head = 0;
    for (const q of pending) q!.reject(e);
    this.onClose(e);
  }
}

function malformedAuth(): PgConnectionError {
  return new PgConnectionError(
    "PROTOCOL_ERROR",
    "PostgreSQL sent a malformed authentication message",
  );
}

function outOfOrder(what: string): PgConnectionError {
  return new PgConnectionError(
    "PROTOCOL_ERROR",
    `PostgreSQL sent ${what} out of order during authentication`,
  );
}

function closeQuietly(conn: Socket | undefined): void {
  try {
    conn?.close();
  } catch { /* already closed */ }
}

function where(opts: ConnectOptions): string {
  return opts.host.startsWith("/") ? opts.host : `${opts.host}:${opts.port}`;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function asConnectionError(e: unknown, opts: ConnectOptions): PgConnectionError {
  if (e instanceof PgConnectionError) return e;
  if (e instanceof PgError) {
    return new PgConnectionError(
      "CONNECTION_REFUSED",
      `PostgreSQL at ${where(opts)} refused the connection: ${e.message} (${e.code})`,
      { cause: e },
    );
  }
  const refused = e instanceof Deno.errors.ConnectionRefused;
  return new PgConnectionError(
    refused ? "ECONNREFUSED" : "CONNECTION_FAILED",
    `cannot connect to PostgreSQL at ${where(opts)}: ${message(e)}`,
    { cause: e },
  );
}

/**
 * CancelRequest (protocol 53.2.7), on a connection of its own: over TLS when the cancelled
 * connection used it (checked as sslmode says), in clear otherwise. PostgreSQL closes the
 * connection once it has signalled the backend. Never rejects: a cancel that cannot be sent
 * within connect_timeout leaves the statement to statement_timeout.
 */
async function sendCancel(
  opts: ConnectOptions,
  tls: boolean,
  pid: number,
  secret: number,
): Promise<void> {
  const abort = new AbortController();
  let conn: Socket | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const work = (async () => {
    const tcp = await dial(opts, abort.signal);
    conn = tcp;
    if (abort.signal.aborted) return;
    if (tls && !opts.host.startsWith("/")) {
      conn = (await negotiateTls(tcp as Deno.TcpConn, opts, (t) => conn = t)).conn;
      if (abort.signal.aborted) return;
    }
    const w = new wire.Writer();
    w.int32(16).int32(80877102).int32(pid).int32(secret);
    await conn.write(w.take());
    // PostgreSQL answers nothing: it closes the connection once the backend is signalled.
    await conn.read(new Uint8Array(1));
  })().catch(() => {/* unreachable: statement_timeout ends the statement */});
  await Promise.race([
    work,
    new Promise((resolve) => timer = setTimeout(resolve, opts.connectTimeoutMs)),
  ]);
  clearTimeout(timer);
  abort.abort();
  closeQuietly(conn);
}

async function dial(opts: ConnectOptions, signal: AbortSignal): Promise<Deno.Conn> {
  if (opts.host.startsWith("/")) {
    return await Deno.connect({ transport: "unix", path: `${opts.host}/.s.PGSQL.${opts.port}` });
  }
  const conn = await Deno.connect({ hostname: opts.host, port: opts.port, signal });
  conn.setNoDelay(true);
  conn.setKeepAlive(true);
  return conn;
}

/**
 * SSLRequest and the TLS handshake, as `sslmode` says (libpq's meanings): verify-full checks the
 * certificate chain and the host name, verify-ca the chain; require, prefer and allow encrypt
 * without checking, unless `sslrootcert` names the CAs to trust (then the chain is checked, as
 * libpq does when a root certificate is there). A server that declines TLS is used in clear for
 * prefer (the caller's attempt) and refused otherwise.
 */
async function negotiateTls(
  conn: Deno.TcpConn,
  opts: ConnectOptions,
  hold: (tls: Socket) => void,
): Promise<{ conn: Socket; state: TlsState }> {
  const w = new wire.Writer();
  wire.sslRequest(w);
  await conn.write(w.take());
  // One byte only: whatever a man in the middle appends after it goes into the TLS handshake
  // (and fails it), never into the protocol (CVE-2021-23222).
  const answer = new Uint8Array(1);
  if ((await conn.read(answer)) !== 1) {
    throw new PgConnectionError("CONNECTION_CLOSED", "PostgreSQL closed the connection");
  }
  if (answer[0] === 0x4e) { // N: the server does not do TLS
    if (opts.ssl === "prefer") return { conn, state: "none" };
    throw new PgConnectionError(
      "TLS_REQUIRED",
      `PostgreSQL at ${where(opts)} does not accept TLS and sslmode is ${opts.ssl}`,
    );
  }
  if (answer[0] !== 0x53) {
    throw new PgConnectionError("PROTOCOL_ERROR", "unexpected answer to the TLS request");
  }
  const verify = opts.ssl === "verify-ca" || opts.ssl === "verify-full" || !!opts.sslRootCert;
  try {
    if (!verify) return { conn: await startUnverifiedTls(conn, opts.host), state: "unverified" };
    let caCerts: string[] | undefined;
    if (opts.sslRootCert && opts.sslRootCert !== "system") {
      try {
        caCerts = [await Deno.readTextFile(opts.sslRootCert)];
      } catch (e) {
        // Not TLS_FAILED: prefer must not go on in clear over a mistyped path.
        throw new PgConnectionError(
          "SSLROOTCERT_UNREADABLE",
          `cannot read sslrootcert ${opts.sslRootCert}: ${message(e)}`,
          { cause: e },
        );
      }
    }
    const tls = await Deno.startTls(conn, {
      hostname: opts.host,
      caCerts,
      // verify-ca (and require/prefer/allow with sslrootcert): the chain, not the name
      unsafelyDisableHostnameVerification: opts.ssl !== "verify-full",
    });
    // From here on a timeout closes the TLS connection, which cancels the handshake. (Deno
    // 2.9 then leaves the socket itself open until the server gives up, e.g. PostgreSQL's
    // authentication_timeout, 60 s by default; node:tls below closes it at once.)
    hold(tls);
    await tls.handshake();
    return { conn: tls, state: "verified" };
  } catch (e) {
    if (e instanceof PgConnectionError) throw e;
    closeQuietly(conn);
    throw new PgConnectionError(
      "TLS_FAILED",
      `TLS with PostgreSQL at ${where(opts)} failed (sslmode=${opts.ssl}): ${message(e)}`,
      { cause: e },
    );
  }
}

/**
 * TLS that encrypts without checking the server's certificate (libpq's require, prefer and
 * allow): Deno's own TLS always verifies, node:tls can be told not to. Its socket is read and
 * written through this adapter; verified connections stay on Deno's TLS.
 */
async function startUnverifiedTls(conn: Deno.TcpConn, host: string): Promise<Socket> {
  const buf = new Uint8Array(64 * 1024);
  const transport = new Duplex({
    read() {
      conn.read(buf).then((n) => {
        if (n === null) this.push(null);
        else this.push(buf.slice(0, n)); // a copy of what came, the buffer is read into again
      }, (e) => this.destroy(e));
    },
    write(chunk: Uint8Array, _encoding, done) {
      (async () => {
        let off = 0;
        while (off < chunk.length) off += await conn.write(chunk.subarray(off));
      })().then(() => done(), done);
    },
    destroy(e, done) {
      closeQuietly(conn);
      done(e);
    },
  });
  const tls = tlsConnect({
    socket: transport,
    rejectUnauthorized: false,
    servername: isIP(host) ? undefined : host,
  });
  const socket = new NodeSocket(tls);
  await new Promise<void>((resolve, reject) => {
    tls.once("secureConnect", resolve);
    tls.once("error", reject);
    tls.once("close", () => reject(new Error("the server closed the connection")));
  });
  return socket;
}

/** A node:tls socket read and written like a Deno.Conn. */
class NodeSocket implements Socket {
  readonly #tls: TLSSocket;
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  #ended = false;
  #error: unknown = null;
  #wake: (() => void) | null = null;

  constructor(tls: TLSSocket) {
    this.#tls = tls;
    tls.on("data", (d: Uint8Array) => {
      this.#chunks.push(d);
      this.#buffered += d.length;
      if (this.#buffered > 1 << 20) tls.pause(); // the reader is behind
      this.#notify();
    });
    tls.on("end", () => {
      this.#ended = true;
      this.#notify();
    });
    tls.on("close", () => {
      this.#ended = true;
      this.#notify();
    });
    tls.on("error", (e) => {
      this.#error = e;
      this.#notify();
    });
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async read(p: Uint8Array): Promise<number | null> {
    while (this.#chunks.length === 0) {
      if (this.#error !== null) throw this.#error;
      if (this.#ended) return null;
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
    const chunk = this.#chunks[0];
    const n = Math.min(p.length, chunk.length);
    p.set(chunk.subarray(0, n));
    if (n === chunk.length) this.#chunks.shift();
    else this.#chunks[0] = chunk.subarray(n);
    this.#buffered -= n;
    if (this.#buffered <= 1 << 19 && this.#tls.isPaused()) this.#tls.resume();
    return n;
  }

  write(p: Uint8Array): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#tls.write(Buffer.from(p.buffer, p.byteOffset, p.length), (e) => {
        if (e) reject(e);
        else resolve(p.length);
      });
    });
  }

  close(): void {
    this.#tls.destroy();
    this.#ended = true;
    this.#notify();
  }
}

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
import { md5Password, Scram } from "./auth.ts";
import { errorFields, PgConnectionError, PgError } from "./errors.ts";
import type { ConnectOptions } from "./options.ts";
import { BINARY_RESULTS, paramType, parserFor, serialize, timestamptzFromBinary } from "./types.ts";
import * as wire from "./wire.ts";

/** A result row. */
export type Row = Record<string, unknown>;

/** Statements kept prepared per connection. */
export const STATEMENT_CACHE_SIZE = 500;

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
  resolve: (rows: Row[]) => void;
  reject: (e: unknown) => void;
}

/** A ready connection. */
export class Connection {
  readonly #conn: Deno.Conn;
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
  #startup: { resolve: () => void; reject: (e: unknown) => void; opts: ConnectOptions } | null =
    null;
  #scram: Scram | null = null;
  /** Transaction status of the last ReadyForQuery: I idle, T in a transaction, E failed one. */
  txStatus = "I";
  /** Server parameters (server_version, TimeZone, ...). */
  readonly parameters = new Map<string, string>();
  /** Called once when the connection fails or closes. */
  onClose: (e: PgConnectionError) => void = () => {};
  /** Called whenever a query finished. */
  onIdle: () => void = () => {};
  /** Pool bookkeeping. */
  reserved = false;
  draining = false;
  lastUsed = performance.now();

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Opens, negotiates TLS when asked, authenticates; rejects with PgConnectionError or PgError. */
  static async open(opts: ConnectOptions): Promise<Connection> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let conn: Deno.Conn | undefined;
    let c: Connection | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new PgConnectionError(
            "CONNECT_TIMEOUT",
            `connection to ${where(opts)} timed out after ${opts.connectTimeoutMs} ms`,
          ),
        );
      }, opts.connectTimeoutMs);
    });
    try {
      return await Promise.race([
        timeout,
        (async () => {
          conn = await dial(opts);
          conn = await negotiateTls(conn, opts);
          c = new Connection(conn);
          await c.#begin(opts);
          return c;
        })(),
      ]);
    } catch (e) {
      if (c) c.#fail(asConnectionError(e, opts));
      else {
        try {
          conn?.close();
        } catch { /* already closed */ }
      }
      throw asConnectionError(e, opts);
    } finally {
      clearTimeout(timer);
    }
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
  query(text: string, params: readonly unknown[] = []): Promise<Row[]> {
    if (this.#closed) return Promise.reject(this.#closeError);
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
    return this.#enqueue(st, parses, formats);
  }

  /** Runs statements without parameters (simple protocol: several may be sent at once). */
  simple(text: string): Promise<Row[]> {
    if (this.#closed) return Promise.reject(this.#closeError);
    wire.simpleQuery(this.#w, text);
    return this.#enqueue(null, false, null);
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
  ): Promise<Row[]> {
    return new Promise<Row[]>((resolve, reject) => {
      this.#pending.push({
        statement,
        parses,
        names: null,
        parsers: [],
        formats,
        rows: [],
        error: null,
        sentAt: performance.now(),
        resolve,
        reject,
      });
      this.#scheduleFlush();
    });
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
      const len = this.#view.getInt32(at + 1);
      if (this.#end - at < len + 1) {
        // an incomplete message: make sure the buffer can hold all of it
        this.#start = at;
        if (this.#start + len + 1 > this.#buf.length) this.#makeRoom(len + 1 - (this.#end - at));
        return;
      }
      this.#handle(this.#buf[at], at + 5, at + 1 + len);
      if (this.#closed) return;
      at += len + 1;
    }
    if (at === this.#end) {
      this.#start = 0;
      this.#end = 0;
    } else this.#start = at;
  }

  #handle(type: number, start: number, end: number): void {
    const q = this.#pending[this.#head];
    switch (type) {
      case 0x44: // D DataRow
        if (q && q.error === null) this.#row(q, start);
        return;
      case 0x54: // T RowDescription
        this.#describe(q, start);
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
        const [k, next] = wire.cstringAt(this.#buf, start);
        const [v] = wire.cstringAt(this.#buf, next);
        this.parameters.set(k, v);
        return;
      }
      case 0x4b: // K BackendKeyData
        return;
      case 0x52: // R Authentication*
        return this.#auth(start, end);
      default:
        this.#fail(
          new PgConnectionError(
            "PROTOCOL_ERROR",
            `unexpected message "${
              String.fromCharCode(type)
            }" from PostgreSQL (COPY is not supported)`,
          ),
        );
    }
  }

  #describe(q: Pending | undefined, start: number): void {
    const n = this.#view.getInt16(start);
    const names = new Array<string>(n);
    const parsers = new Array<((s: string) => unknown) | undefined>(n);
    let formats: Uint8Array | null = null;
    let at = start + 2;
    for (let i = 0; i < n; i++) {
      const [name, next] = wire.cstringAt(this.#buf, at);
      names[i] = name;
      const oid = this.#view.getInt32(next + 6);
      parsers[i] = parserFor(oid);
      if (BINARY_RESULTS.has(oid)) (formats ??= new Uint8Array(n))[i] = 1;
      at = next + 18;
    }
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

  #row(q: Pending, start: number): void {
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
    if (q.error !== null) q.reject(q.error);
    else q.resolve(q.rows);
    this.onIdle();
  }

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
    try {
      switch (code) {
        case 0: // AuthenticationOk
          return;
        case 3: // clear text
          need("clear-text");
          wire.passwordMessage(this.#w, password);
          break;
        case 5: // MD5 with a 4-byte salt
          need("MD5");
          wire.passwordMessage(
            this.#w,
            md5Password(user, password, this.#buf.slice(start + 4, start + 8)),
          );
          break;
        case 10: { // SASL: a list of mechanisms
          const mechanisms: string[] = [];
          let at = start + 4;
          while (at < end && this.#buf[at] !== 0) {
            const [m, next] = wire.cstringAt(this.#buf, at);
            mechanisms.push(m);
            at = next;
          }
          if (!mechanisms.includes("SCRAM-SHA-256")) {
            throw new PgConnectionError(
              "AUTH_FAILED",
              `PostgreSQL offers only ${mechanisms.join(", ")}; SCRAM-SHA-256 is supported`,
            );
          }
          need("SCRAM-SHA-256");
          this.#scram = new Scram(password);
          wire.saslInitial(this.#w, "SCRAM-SHA-256", this.#scram.first());
          break;
        }
        case 11: // SASLContinue
          wire.passwordMessage(
            this.#w,
            new TextEncoder().encode(
              this.#scram!.final(new TextDecoder().decode(this.#buf.subarray(start + 4, end))),
            ),
          );
          break;
        case 12: // SASLFinal
          this.#scram!.verify(new TextDecoder().decode(this.#buf.subarray(start + 4, end)));
          this.#scram = null;
          return;
        default:
          throw new PgConnectionError(
            "AUTH_FAILED",
            `PostgreSQL asks for an authentication method this client does not support (${code})`,
          );
      }
      this.#scheduleFlush();
    } catch (e) {
      this.#startup = null;
      s.reject(
        e instanceof PgConnectionError
          ? e
          : new PgConnectionError("AUTH_FAILED", message(e), { cause: e }),
      );
    }
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

async function dial(opts: ConnectOptions): Promise<Deno.Conn> {
  if (opts.host.startsWith("/")) {
    return await Deno.connect({ transport: "unix", path: `${opts.host}/.s.PGSQL.${opts.port}` });
  }
  const conn = await Deno.connect({ hostname: opts.host, port: opts.port });
  conn.setNoDelay(true);
  conn.setKeepAlive(true);
  return conn;
}

/** SSLRequest and the TLS handshake, as `sslmode` says. */
async function negotiateTls(conn: Deno.Conn, opts: ConnectOptions): Promise<Deno.Conn> {
  if (opts.ssl === "disable" || opts.host.startsWith("/")) return conn;
  const w = new wire.Writer();
  wire.sslRequest(w);
  await conn.write(w.take());
  const answer = new Uint8Array(1);
  if ((await conn.read(answer)) !== 1) {
    throw new PgConnectionError("CONNECTION_CLOSED", "PostgreSQL closed the connection");
  }
  if (answer[0] === 0x4e) { // N: the server does not do TLS
    if (opts.ssl === "allow" || opts.ssl === "prefer") return conn;
    throw new PgConnectionError(
      "TLS_REQUIRED",
      `PostgreSQL at ${where(opts)} does not accept TLS and sslmode is ${opts.ssl}`,
    );
  }
  if (answer[0] !== 0x53) {
    throw new PgConnectionError("PROTOCOL_ERROR", "unexpected answer to the TLS request");
  }
  // Deno verifies the certificate chain and the host name in every mode: require and
  // verify-ca are as strict as verify-full here (README: "TLS to PostgreSQL").
  const caCerts = opts.sslRootCert ? [await Deno.readTextFile(opts.sslRootCert)] : undefined;
  return await Deno.startTls(conn as Deno.TcpConn, { hostname: opts.host, caCerts });
}

/**
 * One connection to PostgreSQL over Deno's own sockets (TCP, Unix, TLS): its startup, then its
 * queries. Queries are pipelined: each is Bind/Execute/Sync (Parse/Describe first when new,
 * statements.ts) appended to the write buffer, and the buffer leaves in one write per event-loop
 * turn, or as soon as the previous write is done; the answers come back in order (inflight.ts)
 * and each query's Sync ends its own implicit transaction, so one failing query never affects
 * the others on the connection. Reaching the server is connect.ts's (TLS: tls.ts), the password
 * exchange auth.ts's, reading the server's messages inbox.ts's, their bytes wire.ts's.
 */
import { Authentication } from "./auth.ts";
import { open, sendCancel } from "./connect.ts";
import { errorFields, errorMessage, PgAbortError, PgConnectionError, PgError } from "./errors.ts";
import type { ConnectOptions } from "./options.ts";
import { badFrame, Inbox, malformed, readColumns, readRow, type Row } from "./inbox.ts";
import { InFlight, type Pending, type QueryScope } from "./inflight.ts";
import { type Statement, Statements } from "./statements.ts";
import type { Socket, TlsState } from "./tls.ts";
import * as wire from "./wire.ts";

export type { QueryScope, Row };

/** A connection's startup: resolves on the first ReadyForQuery. */
interface Startup {
  resolve: () => void;
  reject: (e: unknown) => void;
  auth: Authentication;
}

/** A ready connection. */
export class Connection {
  readonly #conn: Socket;
  readonly #w = new wire.Writer();
  readonly #in = new Inbox();
  readonly #pending = new InFlight();
  readonly #statements: Statements;
  #writing = false;
  #flushQueued = false;
  #closed = false;
  #closeError: PgConnectionError | null = null;
  #readDone: Promise<void> = Promise.resolve();
  #startup: Startup | null = null;
  readonly #tls: TlsState;
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
  readonly #opts: ConnectOptions;
  /** BackendKeyData: what a CancelRequest names. */
  #backendPid = 0;
  #backendSecret = 0;
  #cancelled: Promise<void> | null = null;

  private constructor(conn: Socket, tls: TlsState, opts: ConnectOptions) {
    this.#conn = conn;
    this.#tls = tls;
    this.#opts = opts;
    this.#statements = new Statements(opts.unnamedStatements === true);
  }

  /**
   * Opens, negotiates TLS as `sslmode` says, authenticates; rejects with PgConnectionError or
   * PgError. After `connectTimeoutMs` it rejects with CONNECT_TIMEOUT and whatever is still under
   * way (the dial, the TLS handshake, the authentication) is aborted, or closed as soon as it
   * completes: a connection that comes through late is never left open and owned by nobody.
   */
  static open(opts: ConnectOptions): Promise<Connection> {
    return open(opts, (socket, tls) => {
      const c = new Connection(socket, tls, opts);
      return { value: c, begin: () => c.#begin(opts), fail: (e) => c.#fail(e) };
    });
  }

  /** Queries sent and not yet answered. */
  get inflight(): number {
    return this.#pending.size;
  }

  /** When the oldest unanswered query was sent (performance.now), or null. */
  get oldestSentAt(): number | null {
    return this.inflight ? this.#pending.first!.sentAt : null;
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
    const { statement, parses, formats } = this.#statements.write(this.#w, text, params);
    // Nothing was written for a statement whose Parse failed: its queries get that error.
    if (!parses && statement.failed !== null) return Promise.reject(statement.failed);
    return this.#enqueue(statement, parses, formats, scope);
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
   * Gives up the queries whose scope ended (inflight.ts); when the one PostgreSQL is running is
   * among them, a CancelRequest stops it. Returns how many were given up.
   */
  expire(now: number, watchAfterMs: number): number {
    return this.#pending.expire(now, watchAfterMs, () => void this.cancel());
  }

  /** When the unanswered queries with a scope must be looked at next (inflight.ts). */
  nextWatch(now: number, watchAfterMs: number, everyMs: number): number {
    return this.#pending.nextWatch(now, watchAfterMs, everyMs);
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
    this.#cancelled = this.#backendPid !== 0
      ? sendCancel(this.#opts, this.#tls !== "none", this.#backendPid, this.#backendSecret)
      : Promise.resolve();
    return this.#cancelled;
  }

  /** Forgets a prepared statement (after "cached plan must not change result type"). */
  forget(text: string): void {
    this.#statements.forget(text, this.#closed ? null : this.#w);
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
   * processes far less than one write and one backend wake-up per query.
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
      const why = `write to PostgreSQL failed: ${errorMessage(e)}`;
      this.#fail(new PgConnectionError("CONNECTION_CLOSED", why, { cause: e }));
    } finally {
      this.#writing = false;
    }
  }

  #begin(opts: ConnectOptions): Promise<void> {
    const ready = new Promise<void>((resolve, reject) => {
      this.#startup = { resolve, reject, auth: new Authentication(opts, this.#tls) };
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
        const n = await this.#conn.read(this.#in.space());
        if (n === null) {
          why = new PgConnectionError("CONNECTION_CLOSED", "PostgreSQL closed the connection");
          break;
        }
        const bad = this.#in.received(n, this.#onMessage);
        if (bad !== null) this.#fail(bad);
      }
    } catch (e) {
      why = this.#closed ? this.#closeError! : new PgConnectionError(
        "CONNECTION_CLOSED",
        `PostgreSQL connection lost: ${errorMessage(e)}`,
        { cause: e },
      );
    }
    this.#fail(why);
  }

  /** Handles one message; false once the connection is closed (the rest is not read). */
  readonly #onMessage = (type: number, start: number, end: number): boolean => {
    this.#handle(type, start, end);
    return !this.#closed;
  };

  #handle(type: number, start: number, end: number): void {
    const q = this.#pending.first;
    const buf = this.#in.buf;
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
        this.txStatus = String.fromCharCode(buf[start]);
        if (this.#startup) {
          const s = this.#startup;
          this.#startup = null;
          s.resolve();
          return;
        }
        if (q) this.#finish(q);
        return;
      case 0x45: // E ErrorResponse
        return this.#error(q, new PgError(errorFields(buf, start, end)));
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
        const [k, next] = wire.cstringAt(buf, start, end);
        const [v, stop] = wire.cstringAt(buf, next, end);
        if (stop !== end) return this.#fail(malformed("S"));
        this.parameters.set(k, v);
        return;
      }
      case 0x4b: // K BackendKeyData
        this.#backendPid = this.#in.view.getInt32(start);
        this.#backendSecret = this.#in.view.getInt32(start + 4);
        return;
      case 0x52: // R Authentication*
        return this.#auth(start, end);
      default: // not reached: Inbox.received refuses unknown types
        this.#fail(badFrame(type, end - start + 4));
    }
  }

  #describe(q: Pending | undefined, start: number, end: number): void {
    const cols = readColumns(this.#in.buf, this.#in.view, start, end);
    if (cols === null) return this.#fail(malformed("T"));
    if (!q) return;
    if (q.statement && q.parses) {
      q.statement.names = cols.names;
      q.statement.parsers = cols.parsers;
      q.statement.formats = cols.formats;
    } else if (!q.statement) {
      q.names = cols.names;
      q.parsers = cols.parsers;
    }
  }

  #row(q: Pending, start: number, end: number): void {
    const st = q.statement;
    const names = st ? st.names : q.names;
    if (!names) return;
    const parsers = st ? st.parsers : q.parsers;
    const row = readRow(this.#in.buf, this.#in.view, start, end, names, parsers, q.formats);
    if (row === null) return this.#fail(malformed("D"));
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
      this.#statements.failed(st, err);
    }
    // A query pipelined behind a failed Parse gets that error, not "statement does not exist".
    q.error = st && st.failed !== null && !q.parses ? st.failed : err;
  }

  #finish(q: Pending): void {
    this.#pending.shift();
    this.lastUsed = performance.now();
    if (q.abandoned) {
      // Its caller has its error already. The next one may be given up too: stop it as well.
      const next = this.#pending.first;
      if (next?.abandoned) void this.cancel();
    } else if (q.error !== null) q.reject(q.error);
    else q.resolve(q.rows);
    this.onIdle();
  }

  /** An Authentication* message during startup: answered as auth.ts decides. */
  #auth(start: number, end: number): void {
    const s = this.#startup;
    if (!s) return;
    try {
      const answer = s.auth.message(this.#in.buf, this.#in.view, start, end, this.#w);
      if (answer === true) this.#scheduleFlush();
      else if (answer !== false) {
        answer.then((body) => {
          if (this.#startup !== s || this.#closed) return;
          wire.passwordMessage(this.#w, body);
          this.#scheduleFlush();
        }, (e) => this.#authFailed(s, e));
      }
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
        : new PgConnectionError("AUTH_FAILED", errorMessage(e), { cause: e }),
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
    for (const q of this.#pending.clear()) q.reject(e);
    this.onClose(e);
  }
}

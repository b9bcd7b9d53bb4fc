/**
 * Reaching PostgreSQL: the socket (TCP or Unix), the attempts `sslmode` calls for, the connect
 * timeout, and the CancelRequest's connection of its own. What runs on the socket once it is
 * there (startup, authentication, queries) is connection.ts's.
 */
import { errorMessage, PgConnectionError, PgError } from "./errors.ts";
import { type ConnectOptions, isLocalHost, where } from "./options.ts";
import { closeQuietly, negotiateTls, type Socket, type TlsState } from "./tls.ts";
import * as wire from "./wire.ts";

/**
 * A connection made on a socket: `begin` runs its startup and authentication, `fail` closes it
 * with an error (and rejects `begin`).
 */
export interface Started<C> {
  value: C;
  begin(): Promise<void>;
  fail(e: PgConnectionError): void;
}

/** Makes the connection that runs on `socket` (with the TLS it has). */
export type MakeConnection<C> = (socket: Socket, tls: TlsState) => Started<C>;

/** Options whose clear-text warning was given. */
const warned = new WeakSet<ConnectOptions>();

/**
 * Opens, negotiates TLS as `sslmode` says, authenticates; rejects with PgConnectionError or
 * PgError. After `connectTimeoutMs` it rejects with CONNECT_TIMEOUT and whatever is still under
 * way (the dial, the TLS handshake, the authentication) is aborted, or closed as soon as it
 * completes: a connection that comes through late is never left open and owned by nobody.
 */
export async function open<C>(opts: ConnectOptions, make: MakeConnection<C>): Promise<C> {
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
  const attempt = connect(opts, make, abort.signal);
  attempt.catch(() => {}); // after a timeout, its own failure is nobody's business
  try {
    const made = await Promise.race([timeout, attempt]);
    warnIfClear(opts, made.tls);
    return made.value;
  } catch (e) {
    throw asConnectionError(e, opts);
  } finally {
    clearTimeout(timer);
  }
}

interface Made<C> {
  value: C;
  tls: TlsState;
}

/** The attempts `sslmode` calls for (libpq: allow tries TLS after a refusal, prefer plain). */
async function connect<C>(
  opts: ConnectOptions,
  make: MakeConnection<C>,
  signal: AbortSignal,
): Promise<Made<C>> {
  if (opts.ssl === "disable" || opts.host.startsWith("/")) {
    return await attempt(opts, make, false, signal);
  }
  if (opts.ssl === "allow" || opts.ssl === "prefer") {
    const tlsFirst = opts.ssl === "prefer";
    const used = { tls: false };
    let first: unknown;
    try {
      return await attempt(opts, make, tlsFirst, signal, used);
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
      return await attempt(opts, make, !tlsFirst, signal);
    } catch (e) {
      // The error that explains: prefer's server refusal over TLS (a wrong password) rather
      // than the clear retry's; allow's refusal in clear when the server has no TLS at all.
      const tlsError = e instanceof PgConnectionError && e.code.startsWith("TLS_");
      throw (tlsFirst && first instanceof PgError) || (!tlsFirst && tlsError) ? first : e;
    }
  }
  return await attempt(opts, make, true, signal);
}

/** One connection attempt, closed whenever `signal` aborts before it is ready. */
async function attempt<C>(
  opts: ConnectOptions,
  make: MakeConnection<C>,
  tls: boolean,
  signal: AbortSignal,
  used = { tls: false },
): Promise<Made<C>> {
  let conn: Socket | undefined;
  let c: Started<C> | undefined;
  const cancel = () => {
    if (c) c.fail(signal.reason);
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
    c = make(conn, state);
    await c.begin();
    return { value: c.value, tls: state };
  } catch (e) {
    if (c) c.fail(asConnectionError(e, opts));
    else closeQuietly(conn);
    throw e;
  } finally {
    signal.removeEventListener("abort", cancel);
  }
}

/** Tells `opts.warn`, once per options, when a connection sends credentials in clear. */
function warnIfClear(opts: ConnectOptions, tls: TlsState): void {
  if (tls !== "none" || !opts.password || isLocalHost(opts.host) || warned.has(opts)) {
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
    `cannot connect to PostgreSQL at ${where(opts)}: ${errorMessage(e)}`,
    { cause: e },
  );
}

/**
 * CancelRequest (protocol 53.2.7), on a connection of its own: over TLS when the cancelled
 * connection used it (checked as sslmode says), in clear otherwise. PostgreSQL closes the
 * connection once it has signalled the backend. Never rejects: a cancel that cannot be sent
 * within connect_timeout leaves the statement to statement_timeout.
 */
export async function sendCancel(
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

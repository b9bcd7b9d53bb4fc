/**
 * TLS on a PostgreSQL connection, as `sslmode` says (libpq's meanings): the SSLRequest, Deno's
 * TLS when the certificate is checked, and node:tls (adapted to the same socket interface) when
 * it is only encrypted.
 */
import { Buffer } from "node:buffer";
import { isIP } from "node:net";
import { Duplex } from "node:stream";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { errorMessage, PgConnectionError } from "./errors.ts";
import { type ConnectOptions, where } from "./options.ts";
import * as wire from "./wire.ts";

/** What a connection reads from and writes to: a Deno socket, or TLS without verification. */
export interface Socket {
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  close(): void;
}

/** TLS on a connection: none, encrypted without a verified certificate, or verified. */
export type TlsState = "none" | "unverified" | "verified";

/** Closes a socket that may be closed already. */
export function closeQuietly(conn: Socket | undefined): void {
  try {
    conn?.close();
  } catch { /* already closed */ }
}

/**
 * SSLRequest and the TLS handshake, as `sslmode` says (libpq's meanings): verify-full checks the
 * certificate chain and the host name, verify-ca the chain; require, prefer and allow encrypt
 * without checking, unless `sslrootcert` names the CAs to trust (then the chain is checked, as
 * libpq does when a root certificate is there). A server that declines TLS is used in clear for
 * prefer (the caller's attempt) and refused otherwise.
 */
export async function negotiateTls(
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
          `cannot read sslrootcert ${opts.sslRootCert}: ${errorMessage(e)}`,
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
      `TLS with PostgreSQL at ${where(opts)} failed (sslmode=${opts.ssl}): ${errorMessage(e)}`,
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

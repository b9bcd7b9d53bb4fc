/**
 * A fake PostgreSQL server: a TCP listener on 127.0.0.1 that speaks just
 * enough of the protocol (3.0) for a test to script what a broken or hostile
 * server does: skip the end of SCRAM, sign wrongly, ask for a clear-text
 * password, send a frame of impossible length.
 *
 *   const fake = startFakePg(async (s) => {
 *     await s.startup();                 // the StartupMessage (an SSLRequest is answered "N")
 *     s.send(s.auth(0)); s.ready();      // AuthenticationOk, ReadyForQuery
 *     await s.serveQueries();            // answers each simple query with one row
 *   });
 *   ... postgres://u:pw@127.0.0.1:${fake.port}/db ...
 *   await fake.close();
 */
import { Buffer } from "node:buffer";
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One client connection of the fake server. */
export class FakeSession {
  readonly conn: Deno.Conn;
  #buf = new Uint8Array(0);
  /** Startup parameters the client sent. */
  params: Record<string, string> = {};
  /** Every typed message the client sent: [type, body]. */
  readonly received: [string, Uint8Array][] = [];

  constructor(conn: Deno.Conn) {
    this.conn = conn;
  }

  async #fill(n: number): Promise<boolean> {
    while (this.#buf.length < n) {
      const chunk = new Uint8Array(65536);
      const got = await this.conn.read(chunk).catch(() => null);
      if (got === null) return false;
      const next = new Uint8Array(this.#buf.length + got);
      next.set(this.#buf);
      next.set(chunk.subarray(0, got), this.#buf.length);
      this.#buf = next;
    }
    return true;
  }

  #take(n: number): Uint8Array {
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.slice(n);
    return out;
  }

  /**
   * Reads the StartupMessage, answering an SSLRequest with "N" first; with `ssl` "S", answers it
   * with "S" (TLS accepted) and throws, as this fake cannot do TLS: the caller closes.
   */
  async startup(ssl: "N" | "S" = "N"): Promise<void> {
    for (;;) {
      if (!(await this.#fill(4))) throw new Error("client left before its startup message");
      const len = new DataView(this.#buf.buffer).getInt32(0);
      await this.#fill(len);
      const body = this.#take(len).subarray(4);
      const code = new DataView(body.buffer, body.byteOffset).getInt32(0);
      if (code === 80877103) { // SSLRequest
        await this.conn.write(enc.encode(ssl));
        if (ssl === "S") throw new Error("the client starts TLS");
        continue;
      }
      const parts = dec.decode(body.subarray(4)).split("\0");
      for (let i = 0; i + 1 < parts.length; i += 2) {
        if (parts[i]) this.params[parts[i]] = parts[i + 1];
      }
      return;
    }
  }

  /** The next typed message, or null when the client closed. */
  async read(): Promise<[string, Uint8Array] | null> {
    if (!(await this.#fill(5))) return null;
    const len = new DataView(this.#buf.buffer).getInt32(1);
    if (!(await this.#fill(len + 1))) return null;
    const m = this.#take(len + 1);
    const msg: [string, Uint8Array] = [String.fromCharCode(m[0]), m.subarray(5)];
    this.received.push(msg);
    return msg;
  }

  /** Writes raw bytes (ignoring a client that is gone). */
  send(...messages: Uint8Array[]): Promise<void> {
    return (async () => {
      for (const m of messages) {
        let off = 0;
        while (off < m.length) off += await this.conn.write(m.subarray(off));
      }
    })().catch(() => {});
  }

  /** An Authentication* message. */
  auth(code: number, data: Uint8Array = new Uint8Array(0)): Uint8Array {
    const body = new Uint8Array(4 + data.length);
    new DataView(body.buffer).setInt32(0, code);
    body.set(data, 4);
    return message("R", body);
  }

  /** The rest of a good startup: a parameter, the key data, ReadyForQuery. */
  ready(): Promise<void> {
    return this.send(
      message("S", cstrings("server_version", "15.0")),
      message("K", new Uint8Array(8)),
      message("Z", enc.encode("I")),
    );
  }

  /**
   * The server side of SCRAM-SHA-256 for `password`, as far as `until` says: "continue" sends
   * the server-first-message and stops, "final" the final message too; `signature` replaces the
   * server's signature. Returns after the client's final message ("continue", "final").
   */
  async scram(
    password: string,
    opts: { iterations?: number; until?: "mechanisms" | "continue" | "final"; signature?: string } =
      {},
  ): Promise<void> {
    await this.send(this.auth(10, cstrings("SCRAM-SHA-256", "")));
    if (opts.until === "mechanisms") return;
    const first = await this.read();
    if (!first || first[0] !== "p") throw new Error("no SASLInitialResponse");
    const body = first[1];
    const mechEnd = body.indexOf(0);
    const clientFirst = dec.decode(body.subarray(mechEnd + 5));
    const clientFirstBare = clientFirst.replace(/^n,,/, "");
    const clientNonce = /r=([^,]*)/.exec(clientFirstBare)![1];
    const salt = randomBytes(16);
    const iterations = opts.iterations ?? 4096;
    const serverFirst = `r=${clientNonce}${randomBytes(18).toString("base64")},s=${
      salt.toString("base64")
    },i=${iterations}`;
    await this.send(this.auth(11, enc.encode(serverFirst)));
    const final = await this.read();
    if (!final || final[0] !== "p") throw new Error("no SASLResponse");
    if (opts.until === "continue") return;
    const clientFinal = dec.decode(final[1]);
    const withoutProof = clientFinal.replace(/,p=.*$/, "");
    const salted = pbkdf2Sync(password, salt, iterations, 32, "sha256");
    const serverKey = createHmac("sha256", salted).update("Server Key").digest();
    const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
    const signature = opts.signature ??
      createHmac("sha256", serverKey).update(authMessage).digest("base64");
    await this.send(this.auth(12, enc.encode(`v=${signature}`)));
  }

  /** Answers each simple query with one row {v: "ok"} until the client leaves. */
  async serveQueries(
    onQuery?: (sql: string) => Promise<boolean | void> | boolean | void,
  ): Promise<void> {
    for (;;) {
      const m = await this.read();
      if (m === null || m[0] === "X") return;
      if (m[0] !== "Q") continue;
      const sql = dec.decode(m[1]).replace(/\0$/, "");
      if (onQuery && (await onQuery(sql)) === true) continue; // answered by the callback
      await this.send(
        rowDescription("v"),
        dataRow("ok"),
        message("C", cstrings("SELECT 1")),
        message("Z", enc.encode("I")),
      );
    }
  }
}

/** A message of `type` with `body`, its length computed. */
export function message(type: string, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.length);
  out[0] = type.charCodeAt(0);
  new DataView(out.buffer).setInt32(1, 4 + body.length);
  out.set(body, 5);
  return out;
}

/** A message header that states `length` whatever follows. */
export function header(type: string, length: number): Uint8Array {
  const out = new Uint8Array(5);
  out[0] = type.charCodeAt(0);
  new DataView(out.buffer).setInt32(1, length);
  return out;
}

/** NUL-terminated strings, concatenated. */
export function cstrings(...s: string[]): Uint8Array {
  return enc.encode(s.map((x) => `${x}\0`).join(""));
}

/** RowDescription of text columns. */
export function rowDescription(...names: string[]): Uint8Array {
  const parts: number[] = [];
  const head = new Uint8Array(2);
  new DataView(head.buffer).setInt16(0, names.length);
  parts.push(...head);
  for (const n of names) {
    parts.push(...cstrings(n));
    const f = new Uint8Array(18);
    const v = new DataView(f.buffer);
    v.setInt32(6, 25); // text
    v.setInt16(10, -1);
    v.setInt32(12, -1);
    parts.push(...f);
  }
  return message("T", new Uint8Array(parts));
}

/** DataRow of text values. */
export function dataRow(...values: string[]): Uint8Array {
  const parts: number[] = [];
  const head = new Uint8Array(2);
  new DataView(head.buffer).setInt16(0, values.length);
  parts.push(...head);
  for (const v of values) {
    const b = enc.encode(v);
    const len = new Uint8Array(4);
    new DataView(len.buffer).setInt32(0, b.length);
    parts.push(...len, ...b);
  }
  return message("D", new Uint8Array(parts));
}

/** The MD5 password the client should send (to check what a fake received). */
export function md5Answer(user: string, password: string, salt: Uint8Array): string {
  const inner = createHash("md5").update(password + user).digest("hex");
  return "md5" + createHash("md5").update(inner).update(Buffer.from(salt)).digest("hex");
}

/** A running fake server. */
export interface FakePg {
  port: number;
  /** Sessions so far, in order of connection. */
  sessions: FakeSession[];
  /** Stops listening, closes every session and waits for their scripts. */
  close(): Promise<void>;
}

/** Starts a fake server; `script` plays each connection (its errors are kept, not thrown). */
export function startFakePg(script: (s: FakeSession, n: number) => Promise<void>): FakePg {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const sessions: FakeSession[] = [];
  const tasks: Promise<void>[] = [];
  const loop = (async () => {
    try {
      for await (const conn of listener) {
        const s = new FakeSession(conn);
        sessions.push(s);
        tasks.push(script(s, sessions.length - 1).catch(() => {}));
      }
    } catch { /* closed */ }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    sessions,
    async close() {
      try {
        listener.close();
      } catch { /* closed */ }
      await loop;
      for (const s of sessions) {
        try {
          s.conn.close();
        } catch { /* closed */ }
      }
      await Promise.all(tasks);
    },
  };
}

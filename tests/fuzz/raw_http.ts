/**
 * A minimal HTTP/1.1 client over a raw TCP connection, for what fetch cannot
 * send: a chunked body on GET, HEAD or DELETE. After the request it sends
 * `GET /health` on the same connection, so a server that lost the
 * connection's framing (or closed it) is seen.
 */

/** A parsed response. */
export interface RawResponse {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

class Reader {
  buf = new Uint8Array(0);
  eof = false;
  constructor(private conn: Deno.Conn) {}

  async fill(): Promise<boolean> {
    const chunk = new Uint8Array(65536);
    const n = await this.conn.read(chunk);
    if (n === null) {
      this.eof = true;
      return false;
    }
    const next = new Uint8Array(this.buf.length + n);
    next.set(this.buf);
    next.set(chunk.subarray(0, n), this.buf.length);
    this.buf = next;
    return true;
  }

  async line(): Promise<string> {
    for (;;) {
      const i = this.buf.findIndex((b, j) => b === 13 && this.buf[j + 1] === 10);
      if (i >= 0) {
        const s = dec.decode(this.buf.subarray(0, i));
        this.buf = this.buf.subarray(i + 2);
        return s;
      }
      if (!await this.fill()) throw new Error("connection closed mid-response");
    }
  }

  async take(n: number): Promise<Uint8Array> {
    while (this.buf.length < n) {
      if (!await this.fill()) throw new Error("connection closed mid-body");
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
}

async function readResponse(rd: Reader, head: boolean): Promise<RawResponse> {
  const statusLine = await rd.line();
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!m) throw new Error(`bad status line ${JSON.stringify(statusLine.slice(0, 100))}`);
  const headers = new Headers();
  for (;;) {
    const l = await rd.line();
    if (l === "") break;
    const i = l.indexOf(":");
    headers.append(l.slice(0, i).trim(), l.slice(i + 1).trim());
  }
  const status = Number(m[1]);
  if (head || status === 204 || status === 304) {
    return { status, headers, body: new Uint8Array(0) };
  }
  if ((headers.get("transfer-encoding") ?? "").toLowerCase().includes("chunked")) {
    const parts: Uint8Array[] = [];
    for (;;) {
      const size = parseInt(await rd.line(), 16);
      if (!size) {
        await rd.line();
        break;
      }
      parts.push(await rd.take(size));
      await rd.line();
    }
    const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      body.set(p, o);
      o += p.length;
    }
    return { status, headers, body };
  }
  const len = Number(headers.get("content-length") ?? 0);
  return { status, headers, body: new Uint8Array(await rd.take(len)) };
}

/**
 * Sends `method target` with `headers` and `body` as one chunk of a chunked
 * body, then `GET /health` on the same connection. Returns both answers (the
 * second is an Error when the connection was dropped or answered garbage, "closed" when
 * the first answer said `Connection: close`).
 */
export async function chunkedThenHealth(
  port: number,
  method: string,
  target: string,
  headers: [string, string][],
  body: Uint8Array,
): Promise<{ first: RawResponse; second: RawResponse | Error | "closed" }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const lines = [`${method} ${target} HTTP/1.1`, `host: 127.0.0.1:${port}`];
    for (const [k, v] of headers) lines.push(`${k}: ${v.replace(/[\r\n]/g, " ")}`);
    lines.push("transfer-encoding: chunked", "", "");
    const head = enc.encode(lines.join("\r\n"));
    const size = enc.encode(`${body.length.toString(16)}\r\n`);
    const parts = [head, size, body, enc.encode("\r\n0\r\n\r\n")];
    let writeError: Error | undefined;
    try {
      for (const p of parts) {
        let o = 0;
        while (o < p.length) o += await conn.write(p.subarray(o));
      }
    } catch (e) {
      // the server may answer and close before it read the whole body
      writeError = e as Error;
    }
    const rd = new Reader(conn);
    let first: RawResponse;
    try {
      first = await readResponse(rd, method === "HEAD");
    } catch (e) {
      throw writeError ?? e;
    }
    // A server that cannot hand the body on may say `Connection: close` and end the connection
    // cleanly: the client then opens a new one, as HTTP/1.1 has it.
    if (/\bclose\b/i.test(first.headers.get("connection") ?? "")) {
      return { first, second: "closed" };
    }
    let second: RawResponse | Error;
    try {
      const probe = enc.encode(`GET /health HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
      let o = 0;
      while (o < probe.length) o += await conn.write(probe.subarray(o));
      second = await readResponse(rd, false);
    } catch (e) {
      second = e as Error;
    }
    return { first, second };
  } finally {
    try {
      conn.close();
    } catch { /* closed */ }
  }
}

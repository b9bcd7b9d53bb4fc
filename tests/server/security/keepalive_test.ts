/**
 * A body on a request whose route ignores it (issue 25 item 5), sent with a
 * raw TCP client (Deno.connect) so that two requests share one connection:
 * the next request on the connection gets its normal answer, or, where the
 * runtime cannot hand the body to the server (Deno.serve never exposes a GET
 * or HEAD body), the answer says `Connection: close` and the connection ends
 * cleanly: never a bare 400 to the next request.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";

interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** One HTTP/1.1 connection, read response by response. */
class RawConn {
  #buf = new Uint8Array(0);
  #eof = false;
  private constructor(readonly conn: Deno.TcpConn) {}

  static async open(srv: TestServer): Promise<RawConn> {
    const port = Number(new URL(srv.url).port);
    return new RawConn(await Deno.connect({ hostname: "127.0.0.1", port }));
  }

  async write(text: string): Promise<void> {
    const bytes = new TextEncoder().encode(text);
    for (let off = 0; off < bytes.length;) off += await this.conn.write(bytes.subarray(off));
  }

  async #fill(): Promise<boolean> {
    if (this.#eof) return false;
    const chunk = new Uint8Array(16384);
    let n: number | null;
    try {
      n = await this.conn.read(chunk);
    } catch {
      n = null; // reset by the peer: the connection is over
    }
    if (n === null) {
      this.#eof = true;
      return false;
    }
    const merged = new Uint8Array(this.#buf.length + n);
    merged.set(this.#buf);
    merged.set(chunk.subarray(0, n), this.#buf.length);
    this.#buf = merged;
    return true;
  }

  /** The next response, or null when the server closed the connection before one. */
  async response(head: boolean): Promise<RawResponse | null> {
    const dec = new TextDecoder();
    let end: number;
    while ((end = dec.decode(this.#buf).indexOf("\r\n\r\n")) < 0) {
      if (!await this.#fill()) {
        assert.equal(this.#buf.length, 0, `a partial answer: ${dec.decode(this.#buf)}`);
        return null;
      }
    }
    const [statusLine, ...lines] = dec.decode(this.#buf.subarray(0, end)).split("\r\n");
    const headers = new Map(lines.map((l) => {
      const i = l.indexOf(":");
      return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()] as [string, string];
    }));
    const length = head ? 0 : Number(headers.get("content-length") ?? 0);
    while (this.#buf.length < end + 4 + length) {
      assert.ok(await this.#fill(), "the connection ended inside an answer");
    }
    const body = dec.decode(this.#buf.subarray(end + 4, end + 4 + length));
    this.#buf = this.#buf.slice(end + 4 + length);
    return { status: Number(statusLine.split(" ")[1]), headers, body };
  }

  /** True when the server closes the connection without sending anything more. */
  async endsCleanly(): Promise<boolean> {
    while (await this.#fill()) { /* read to the end */ }
    return this.#buf.length === 0;
  }

  close(): void {
    try {
      this.conn.close();
    } catch { /* already closed */ }
  }
}

const NEXT = "GET /health HTTP/1.1\r\nHost: test\r\n\r\n";

function chunked(size: number): string {
  return `${size.toString(16)}\r\n${"b".repeat(size)}\r\n0\r\n\r\n`;
}

Deno.test("a chunked body on a DELETE the route refuses or ignores keeps the connection usable", async () => {
  const srv = await startTestServer({});
  try {
    const admin = await srv.serviceRoleToken();
    const cases: [string, string | undefined, number][] = [
      // refused before the body is looked at
      [`/factors/${crypto.randomUUID()}`, undefined, 401],
      [`/admin/users/${crypto.randomUUID()}/factors/${crypto.randomUUID()}`, undefined, 401],
      // a route with no use for the body
      [`/admin/users/${crypto.randomUUID()}/factors/${crypto.randomUUID()}`, admin, 404],
    ];
    for (const [path, bearer, status] of cases) {
      for (const size of [5, 4000, 100_000]) {
        for (const split of [false, true]) {
          const c = await RawConn.open(srv);
          try {
            const auth = bearer ? `Authorization: Bearer ${bearer}\r\n` : "";
            const head =
              `DELETE ${path} HTTP/1.1\r\nHost: test\r\n${auth}Transfer-Encoding: chunked\r\n\r\n`;
            const label = `DELETE ${path.slice(0, 20)} ${size} bytes${split ? " in parts" : ""}`;
            if (split) {
              // The head first, then the body and the next request in further writes.
              await c.write(head);
              await c.write(chunked(size));
              await c.write(NEXT);
            } else {
              await c.write(head + chunked(size) + NEXT);
            }
            const first = await c.response(false);
            assert.equal(first?.status, status, label);
            const next = await c.response(false);
            assert.equal(next?.status, 200, `${label}: the next request got ${next?.status}`);
            assert.match(next!.body, /"version"/);
          } finally {
            c.close();
          }
        }
      }
    }
  } finally {
    await srv.close();
  }
});

Deno.test("a chunked body on a GET or HEAD: a normal answer, then the next request's answer or a clean Connection: close", async () => {
  const srv = await startTestServer({});
  try {
    let kept = 0;
    let closed = 0;
    for (const method of ["GET", "HEAD"]) {
      for (const path of ["/health", "/settings", "/user"]) {
        for (const size of [5, 4000, 100_000]) {
          const c = await RawConn.open(srv);
          try {
            await c.write(
              `${method} ${path} HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n` +
                chunked(size) + NEXT,
            );
            const label = `${method} ${path} with ${size} bytes`;
            const first = await c.response(method === "HEAD");
            assert.equal(first?.status, path === "/user" ? 401 : 200, label);
            if (first!.headers.get("connection")?.toLowerCase() === "close") {
              // The runtime could not read the body: it says so and ends the connection,
              // sending nothing the client could take for the next answer.
              assert.ok(await c.endsCleanly(), `${label}: bytes after Connection: close`);
              closed++;
            } else {
              const next = await c.response(false);
              assert.equal(next?.status, 200, `${label}: the next request got ${next?.status}`);
              kept++;
            }
          } finally {
            c.close();
          }
        }
      }
    }
    console.log(`GET/HEAD with a body: ${kept} connections kept, ${closed} closed cleanly`);
  } finally {
    await srv.close();
  }
});

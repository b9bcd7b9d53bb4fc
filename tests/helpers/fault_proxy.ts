/**
 * A TCP proxy on 127.0.0.1 that can be cut and restored, to simulate
 * "PostgreSQL restarted during load" without touching the machine's real
 * PostgreSQL service: point the server's DATABASE_URL at the proxy, then
 *
 *   const proxy = await startFaultProxy({ hostname: "127.0.0.1", port: 5432 });
 *   // DATABASE_URL=postgres://postgres@127.0.0.1:${proxy.port}/test
 *   proxy.cut();        // every open connection is reset, new ones are refused
 *   await proxy.restore();  // connections are accepted and forwarded again
 *   await proxy.close();
 *
 * `cut("hang")` instead keeps accepting connections but forwards nothing
 * (bytes are swallowed), the way a black-holed network behaves: the client
 * sees timeouts rather than refusals.
 */

/** How a cut behaves. */
export type CutMode = "refuse" | "hang";

/** A running proxy. */
export interface FaultProxy {
  readonly hostname: string;
  readonly port: number;
  /** Connections accepted since start. */
  readonly accepted: number;
  /** True while cut. */
  readonly isCut: boolean;
  /** Resets every open connection; "refuse" also stops listening, "hang" black-holes new ones. */
  cut(mode?: CutMode): void;
  /** Listens (on the same port) and forwards again. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a proxy to `target` on 127.0.0.1 (port 0 picks a free one). */
export function startFaultProxy(
  target: { hostname: string; port: number },
  listenPort = 0,
): Promise<FaultProxy> {
  const hostname = "127.0.0.1";
  let listener: Deno.Listener | null = null;
  let port = listenPort;
  let mode: CutMode | null = null;
  let accepted = 0;
  const open = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  let acceptLoop: Promise<void> = Promise.resolve();

  const closeQuietly = (c: Deno.Conn) => {
    open.delete(c);
    try {
      c.close();
    } catch { /* already closed */ }
  };

  // Copies one direction until EOF or error; then closes both ends.
  const pump = async (from: Deno.Conn, to: Deno.Conn, pair: Deno.Conn[]) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        if (mode === "hang") continue; // swallowed
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch { /* reset by cut() or by a peer */ }
    for (const c of pair) closeQuietly(c);
  };

  const handle = async (client: Deno.Conn) => {
    accepted++;
    open.add(client);
    if (mode === "hang") {
      // Accept and read nothing back: the client waits until its own timeout.
      await pump(client, client, [client]);
      return;
    }
    let upstream: Deno.Conn;
    try {
      upstream = await Deno.connect({ hostname: target.hostname, port: target.port });
    } catch {
      closeQuietly(client);
      return;
    }
    open.add(upstream);
    if (mode !== null) {
      closeQuietly(client);
      closeQuietly(upstream);
      return;
    }
    const pair = [client, upstream];
    await Promise.all([pump(client, upstream, pair), pump(upstream, client, pair)]);
  };

  const listen = () => {
    const l = Deno.listen({ hostname, port });
    listener = l;
    port = (l.addr as Deno.NetAddr).port;
    acceptLoop = (async () => {
      try {
        for await (const conn of l) {
          const t = handle(conn).catch(() => {});
          tasks.add(t);
          t.finally(() => tasks.delete(t));
        }
      } catch { /* listener closed */ }
    })();
  };

  const stopListening = async () => {
    const l = listener;
    listener = null;
    if (l) {
      try {
        l.close();
      } catch { /* already closed */ }
      await acceptLoop;
    }
  };

  listen();

  return Promise.resolve({
    hostname,
    get port() {
      return port;
    },
    get accepted() {
      return accepted;
    },
    get isCut() {
      return mode !== null;
    },
    cut(how: CutMode = "refuse") {
      mode = how;
      for (const c of [...open]) closeQuietly(c);
      if (how === "refuse") void stopListening();
    },
    async restore() {
      const wasRefusing = mode === "refuse";
      mode = null;
      for (const c of [...open]) closeQuietly(c); // hung ones
      if (wasRefusing || !listener) {
        await stopListening();
        // The port may linger for a moment after close; retry briefly.
        for (let i = 0;; i++) {
          try {
            listen();
            break;
          } catch (e) {
            if (i > 50) throw e;
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      }
    },
    async close() {
      mode = "refuse";
      await stopListening();
      for (const c of [...open]) closeQuietly(c);
      await Promise.all([...tasks]);
    },
  });
}

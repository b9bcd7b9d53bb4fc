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

/** A proxy whose connections are not accepted until `release()` (see startLateProxy). */
export interface LateProxy {
  readonly port: number;
  /** Clients whose dial to the proxy is still in SYN-SENT (their SYN dropped), from /proc. */
  dialsPending(): number;
  /** Clients connected to the proxy (ESTABLISHED on their side), from /proc. */
  dialsEstablished(): number;
  /** Accepts again: the held connections (the filler ones are closed) are then forwarded. */
  release(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP proxy to `target` that does not accept for now: its accept queue is filled with
 * connections of its own, so the kernel drops the SYN of any further client, whose dial then
 * completes only after `release()` and the client's next SYN retransmission (about a second
 * later): a dial that completes long after the client's connect timeout. Linux only (it reads
 * /proc/net/tcp).
 */
export async function startLateProxy(
  target: { hostname: string; port: number },
): Promise<LateProxy> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const fillers: Deno.Conn[] = [];
  // Fill the accept queue: connect until a dial is not answered at once.
  for (;;) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 1000);
    try {
      fillers.push(await Deno.connect({ hostname: "127.0.0.1", port, signal: abort.signal }));
    } catch {
      break;
    } finally {
      clearTimeout(timer);
    }
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const clientSockets = (state: string) =>
    Deno.readTextFileSync("/proc/net/tcp").split("\n").filter((line) => {
      const f = line.trim().split(/\s+/);
      return f[3] === state && f[2]?.endsWith(`:${hexPort}`);
    }).length;
  const open = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  const pump = async (from: Deno.Conn, to: Deno.Conn) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch { /* reset */ }
    for (const c of [from, to]) {
      open.delete(c);
      try {
        c.close();
      } catch { /* closed */ }
    }
  };
  let loop: Promise<void> = Promise.resolve();
  return {
    port,
    dialsPending: () => clientSockets("02"),
    dialsEstablished: () => clientSockets("01"),
    release() {
      // The fillers are the first in the queue: accept and drop them.
      const count = fillers.length;
      loop = (async () => {
        let dropped = 0;
        try {
          for await (const conn of listener) {
            if (dropped < count) {
              dropped++;
              conn.close();
              continue;
            }
            open.add(conn);
            const t = (async () => {
              const up = await Deno.connect(target).catch(() => null);
              if (!up) {
                open.delete(conn);
                conn.close();
                return;
              }
              open.add(up);
              await Promise.all([pump(conn, up), pump(up, conn)]);
            })();
            tasks.add(t);
            t.finally(() => tasks.delete(t));
          }
        } catch { /* closed */ }
      })();
      for (const f of fillers.splice(0)) f.close();
      return Promise.resolve();
    },
    async close() {
      for (const f of fillers.splice(0)) f.close();
      try {
        listener.close();
      } catch { /* closed */ }
      await loop;
      for (const c of [...open]) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await Promise.all([...tasks]);
    },
  };
}

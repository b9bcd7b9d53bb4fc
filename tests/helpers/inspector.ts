/**
 * A minimal Chrome DevTools protocol client for a server process started with
 * `--inspect=127.0.0.1:<port>` (startServerProcess's `denoFlags`): a full
 * garbage collection, `Deno.memoryUsage()` inside the process, and V8 heap
 * snapshots. The fuzz (tests/fuzz/harness.ts) measures the server's memory
 * after each pass with it; tests/fuzz/memory.ts diffs snapshots.
 *
 *   const ins = await Inspector.connect(port);
 *   const mem = await ins.memoryAfterGc(); // { heapUsed, heapTotal, external, rss } in bytes
 *   ins.close();
 *
 * V8 keeps object ids across the snapshots of one session: keep one
 * connection open to compare snapshots by id.
 */

/** `Deno.memoryUsage()` of the inspected process, in bytes. */
export interface MemoryUsage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
}

export class Inspector {
  #ws: WebSocket;
  #seq = 0;
  #waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #chunks: string[] = [];
  #closed: Promise<void>;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data as string);
      if (msg.method === "HeapProfiler.addHeapSnapshotChunk") {
        this.#chunks.push(msg.params.chunk);
        return;
      }
      const w = msg.id !== undefined ? this.#waiting.get(msg.id) : undefined;
      if (!w) return;
      this.#waiting.delete(msg.id);
      if (msg.error) w.reject(new Error(`inspector: ${JSON.stringify(msg.error)}`));
      else w.resolve(msg.result);
    };
    this.#closed = new Promise((resolve) => {
      ws.onclose = () => {
        for (const w of this.#waiting.values()) w.reject(new Error("inspector: connection closed"));
        this.#waiting.clear();
        resolve();
      };
    });
  }

  /** Connects to the first target of the inspector listening on 127.0.0.1:`port`. */
  static async connect(port: number): Promise<Inspector> {
    const res = await fetch(`http://127.0.0.1:${port}/json/list`);
    const list = await res.json() as { webSocketDebuggerUrl: string }[];
    if (!list.length) throw new Error(`inspector on port ${port}: no target`);
    const ws = new WebSocket(list[0].webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = () => reject(new Error(`inspector on port ${port}: cannot connect`));
    });
    const ins = new Inspector(ws);
    await ins.send("HeapProfiler.enable");
    return ins;
  }

  /** One protocol call. */
  send<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = ++this.#seq;
    const answer = new Promise<T>((resolve, reject) =>
      this.#waiting.set(id, { resolve: resolve as (v: unknown) => void, reject })
    );
    this.#ws.send(JSON.stringify({ id, method, params }));
    return answer;
  }

  /** Evaluates an expression in the process's main realm; its value by value. */
  async evaluate(expression: string): Promise<unknown> {
    const r = await this.send<{ result: { value?: unknown }; exceptionDetails?: unknown }>(
      "Runtime.evaluate",
      { expression, returnByValue: true },
    );
    if (r.exceptionDetails) throw new Error(`inspector: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value;
  }

  /**
   * Full garbage collections (three: objects with finalizers and weak
   * references take more than one), then `Deno.memoryUsage()`.
   */
  async memoryAfterGc(): Promise<MemoryUsage> {
    for (let i = 0; i < 3; i++) await this.send("HeapProfiler.collectGarbage");
    return JSON.parse(await this.evaluate("JSON.stringify(Deno.memoryUsage())") as string);
  }

  /**
   * A V8 heap snapshot (the `.heapsnapshot` JSON Chrome DevTools reads). Taking
   * one costs the process native memory of its own: RSS after it is not
   * comparable with RSS before.
   */
  async snapshot(): Promise<string> {
    this.#chunks = [];
    await this.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
    const text = this.#chunks.join("");
    this.#chunks = [];
    return text;
  }

  async close(): Promise<void> {
    this.#ws.close();
    await this.#closed;
  }
}

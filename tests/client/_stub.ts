/** A loopback HTTP stub (Deno.serve on 127.0.0.1, port 0) that records what it received. */

/** A request as the stub saw it, body read. */
export interface SeenRequest {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
  form: URLSearchParams;
}

/** A running stub. */
export interface Stub {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Every request received, in order. */
  requests: SeenRequest[];
  /** The last request. */
  last(): SeenRequest;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a stub answering with `handler`. */
export function startStub(
  handler: (req: SeenRequest, stub: Stub) => Response | Promise<Response>,
): Stub {
  const requests: SeenRequest[] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const body = await request.text();
      const seen: SeenRequest = {
        method: request.method,
        url: new URL(request.url),
        headers: request.headers,
        body,
        form: new URLSearchParams(
          request.headers.get("content-type")?.includes("form") ? body : "",
        ),
      };
      requests.push(seen);
      return await handler(seen, stub);
    },
  );
  const close = async () => {
    await server.shutdown();
  };
  const stub: Stub = {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    last: () => {
      if (!requests.length) throw new Error("the stub received no request");
      return requests[requests.length - 1];
    },
    close,
    [Symbol.asyncDispose]: close,
  };
  return stub;
}

/** A JSON response. */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A logger that records lines. */
export function recordingLogger(): {
  lines: string[];
  debug(...a: unknown[]): void;
  info(...a: unknown[]): void;
  warn(...a: unknown[]): void;
  error(...a: unknown[]): void;
} {
  const lines: string[] = [];
  const push = (...a: unknown[]) => void lines.push(a.map(String).join(" "));
  return { lines, debug: push, info: push, warn: push, error: push };
}

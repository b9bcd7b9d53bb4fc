/**
 * The port's equivalent of Faraday's `:test` adapter, which the gem's specs
 * use: stubs by method and path (a query in the stub path must be present in
 * the request; a body hash must equal the request's form), each answering
 * `[status, headers, body]`. It is handed to the library through its public
 * transport seam (`connectionBuild: (b) => b.adapter(stubs.fetch)`), so
 * everything above the socket is the library's real code.
 */
import { Client, type ClientOptions } from "../../../mod.ts";

/** What a stub sees of a request (Faraday's `env`). */
export interface Env {
  method: string;
  url: URL;
  requestHeaders: Headers;
  body: string;
  /** The form body, parsed. */
  form: URLSearchParams;
}

/** `[status, headers, body]` as in the gem's stubs. */
export type Reply = [number, Record<string, string>, string | null | undefined];
type Handler = (env: Env) => Reply | Promise<Reply>;

interface Route {
  method: string;
  path: string;
  query: URLSearchParams;
  body?: Record<string, string>;
  handler: Handler;
}

/** Faraday's `Stubs`. */
export class Stubs {
  #routes: Route[] = [];
  /** Every request that reached the adapter. */
  readonly requests: Env[] = [];

  #add(method: string, path: string, a: Handler | Record<string, string>, b?: Handler): this {
    const u = new URL(path, "http://stub.invalid");
    this.#routes.push({
      method,
      path: u.pathname,
      query: u.searchParams,
      body: typeof a === "function" ? undefined : a,
      handler: typeof a === "function" ? a : b!,
    });
    return this;
  }
  get(path: string, handler: Handler): this {
    return this.#add("GET", path, handler);
  }
  post(path: string, a: Handler | Record<string, string>, b?: Handler): this {
    return this.#add("POST", path, a, b);
  }
  put(path: string, a: Handler | Record<string, string>, b?: Handler): this {
    return this.#add("PUT", path, a, b);
  }
  patch(path: string, a: Handler | Record<string, string>, b?: Handler): this {
    return this.#add("PATCH", path, a, b);
  }
  delete(path: string, handler: Handler): this {
    return this.#add("DELETE", path, handler);
  }

  /** The adapter: a `fetch`. */
  fetch: typeof fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    url.hash = ""; // a fragment never reaches a server
    const body = await request.text();
    const env: Env = {
      method: request.method,
      url,
      requestHeaders: request.headers,
      body,
      form: new URLSearchParams(body),
    };
    this.requests.push(env);
    const route = this.#routes.find((r) =>
      r.method === request.method && r.path === url.pathname &&
      [...r.query].every(([k, v]) => url.searchParams.get(k) === v) &&
      (r.body === undefined || sameForm(r.body, env.form))
    );
    if (!route) throw new Error(`no stub for ${request.method} ${url.pathname}${url.search}`);
    const [status, headers, text] = await route.handler(env);
    return new Response(text ?? null, { status, headers });
  };
}

function sameForm(expected: Record<string, string>, actual: URLSearchParams): boolean {
  const keys = [...new Set(actual.keys())];
  return keys.length === Object.keys(expected).length &&
    keys.every((k) => actual.get(k) === expected[k]);
}

/** `OAuth2::Client.new(id, secret, opts) { |b| b.adapter :test do |stub| ... end }`. */
export function stubbedClient(
  id: string,
  secret: string,
  opts: ClientOptions,
  define: (stub: Stubs) => void,
): { client: Client; stubs: Stubs } {
  const stubs = new Stubs();
  define(stubs);
  const client = new Client(id, secret, {
    ...opts,
    connectionBuild: (b) => void b.adapter(stubs.fetch),
  });
  return { client, stubs };
}

/** A recording logger (the gem's specs capture `$stdout` or a `Logger`). */
export function captureLogger(): {
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

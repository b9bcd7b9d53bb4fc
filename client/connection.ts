/**
 * The HTTP connection under a `Client`: default headers, a middleware chain,
 * the fetch adapter, the per-request timeout, and (in Deno) an HTTP client for
 * a proxy or a TLS client certificate.
 * @module
 */
import { mistyped } from "./config.ts";
import { Deadlines } from "./deadline.ts";
import type { HttpClient } from "./http_client.ts";
import type { Logger } from "./logger.ts";
import type { Pending } from "./deadline.ts";

/**
 * A middleware: sees the real `Request`, calls `next` (or not), returns the `Response`.
 *
 * @example
 * ```ts
 * import { Client, type Middleware } from "@authsvc/oauth2";
 * const timing: Middleware = async (request, next) => {
 *   const started = performance.now();
 *   const response = await next(request);
 *   console.log(request.method, request.url, response.status, performance.now() - started);
 *   return response;
 * };
 * new Client("id", "secret", { site: "https://id.example.com", connectionBuild: (b) => void b.use(timing) });
 * ```
 */
export type Middleware = (
  request: Request,
  next: (request: Request) => Promise<globalThis.Response>,
) => Promise<globalThis.Response>;

/**
 * Handed to `ClientOptions.connectionBuild` (the Ruby gem's Faraday block).
 *
 * @example
 * ```ts
 * import { Client } from "@authsvc/oauth2";
 * new Client("id", "secret", {
 *   site: "https://id.example.com",
 *   connectionBuild: (builder) => {
 *     builder
 *       .use((req, next) => next(new Request(req, { headers: { ...Object.fromEntries(req.headers), "x-tenant": "a" } })))
 *       .adapter((input, init) => fetch(input, init));
 *   },
 * });
 * ```
 */
export interface ConnectionBuilder {
  /** Adds a middleware; middleware run in the order added. */
  use(middleware: Middleware): ConnectionBuilder;
  /** Replaces the transport (default `connectionOpts.fetch` or `globalThis.fetch`). */
  adapter(fetchImpl: typeof fetch): ConnectionBuilder;
}

/**
 * Options for the underlying connection.
 *
 * @example
 * ```ts
 * import { Client, type ConnectionOptions } from "@authsvc/oauth2";
 * const connectionOpts: ConnectionOptions = {
 *   timeout: 5_000, // ms; the default is 30 s
 *   headers: { "User-Agent": "my-app/1.0" },
 *   proxy: "http://proxy.internal:3128", // Deno; elsewhere pass `fetch`
 * };
 * new Client("id", "secret", { site: "https://id.example.com", connectionOpts });
 * ```
 */
export interface ConnectionOptions {
  /** Headers sent on every request. */
  headers?: Record<string, string>;
  /** Milliseconds per request (until the body is read); default 30000; 0 or Infinity disables it. */
  timeout?: number;
  /** Proxy URL. Deno: used through `Deno.createHttpClient`. Elsewhere: pass a `fetch` that proxies. */
  proxy?: string;
  /** The fetch adapter; default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** TLS client certificate chain (PEM) for `tls_client_auth` (RFC 8705). Deno only. */
  cert?: string;
  /** Private key (PEM) of `cert`. Deno only. */
  key?: string;
  /** Extra trusted CA certificates (PEM) for the provider's TLS certificate. Deno only. */
  caCerts?: string[];
}

/** Default per-request timeout in milliseconds. */
export const DEFAULT_TIMEOUT = 30_000;

/** Builds the chain once; sends requests through it. */
export class Connection implements ConnectionBuilder {
  #middlewares: Middleware[] = [];
  #fetch: typeof fetch | undefined;
  #options: ConnectionOptions;
  #logger: Logger;
  #deadlines: Deadlines | undefined;
  /** The transport options of a proxy or client certificate (Deno's HTTP client), once made. */
  #httpClient: Promise<HttpClient> | undefined;

  /**
   * Creates an instance.
   *
   * @param options connection options
   * @param logger where warnings go
   */
  constructor(options: ConnectionOptions, logger: Logger) {
    this.#options = options;
    this.#fetch = options.fetch;
    this.#logger = logger;
    const ms = options.timeout ?? DEFAULT_TIMEOUT;
    if (Number.isFinite(ms) && ms > 0) this.#deadlines = new Deadlines(ms);
  }

  /** @inheritdoc */
  use(middleware: Middleware): ConnectionBuilder {
    if (typeof middleware !== "function") {
      throw mistyped("use", "middleware", "a function", middleware);
    }
    this.#middlewares.push(middleware);
    return this;
  }

  /** @inheritdoc */
  adapter(fetchImpl: typeof fetch): ConnectionBuilder {
    if (typeof fetchImpl !== "function") {
      throw mistyped("adapter", "fetchImpl", "a function", fetchImpl);
    }
    this.#fetch = fetchImpl;
    return this;
  }

  /** Default headers of every request. */
  get headers(): Record<string, string> | undefined {
    return this.#options.headers;
  }

  /** Closes the Deno HTTP client if one was created (idle connections, proxy). */
  close(): void {
    const made = this.#httpClient;
    this.#httpClient = undefined;
    made?.then((c) => c.close());
  }

  /**
   * Starts the clock of one request (hop): its timeout, and the caller's
   * abort forwarded to the request's signal. The transport awaits the
   * request itself (`send`, then the body), so that the request costs no
   * async function of its own here, and calls `end` once the body is read or
   * the request failed (`failure` says why).
   *
   * @param signal the caller's abort signal
   */
  begin(signal?: AbortSignal): Exchange {
    // One clock reading per request: its deadline, and the time a token's expires_in counts from.
    const sent = Date.now();
    // fetch in flight holds the process open; an adapter or middleware may not (deadline.ts).
    const pending = this.#deadlines?.start(!!this.#fetch || this.#middlewares.length > 0, sent);
    const controller = pending?.controller;
    // The caller's abort reaches the request through the deadline's controller (one signal for fetch).
    const forward = controller && signal && (() => controller.abort(signal.reason));
    return { sent, pending, forward, signal };
  }

  /**
   * Sends a request through the middleware and the adapter (a `Request` is
   * built only when one of them needs it).
   *
   * @param url the request URL
   * @param init method, headers, body, redirect mode (a fresh object: its signal is set here)
   * @param exchange what `begin` gave
   * @returns the response, its body not read yet
   */
  send(url: string, init: RequestInit, exchange: Exchange): Promise<globalThis.Response> {
    const { pending, forward, signal } = exchange;
    if (signal?.aborted) throw signal.reason;
    if (forward) signal!.addEventListener("abort", forward);
    init.signal = pending?.controller.signal ?? signal; // init is the caller's fresh object: no copy
    return this.#options.proxy || this.#options.cert || this.#options.caCerts
      ? this.#viaHttpClient(url, init)
      : this.#dispatch(url, init);
  }

  /**
   * The `ConnectionError` of a request that got no answer (network, timeout,
   * abort), its message without `secrets`.
   */
  async failure(
    cause: unknown,
    exchange: Exchange,
    method: string,
    url: string,
    secrets: readonly (string | undefined)[],
  ): Promise<Error> {
    // The error classes (and redaction) load when a request fails.
    return (await import("./error.ts")).connectionFailure(
      cause,
      !!exchange.pending?.expired,
      !!exchange.signal?.aborted,
      this.#options.timeout ?? DEFAULT_TIMEOUT,
      method,
      url,
      secrets,
    );
  }

  /** Ends the clock of a request: its body is read, or it failed. */
  end(exchange: Exchange): void {
    const { pending, forward, signal } = exchange;
    if (forward) signal!.removeEventListener("abort", forward);
    if (pending) this.#deadlines!.done(pending);
  }

  /** Sends through Deno's HTTP client of a proxy or TLS client certificate. */
  async #viaHttpClient(url: string, init: RequestInit): Promise<globalThis.Response> {
    const made =
      await (this.#httpClient ??= import("./http_client.ts").then((m) =>
        m.httpClientFor(this.#options, !!this.#fetch, this.#logger)
      ));
    return this.#dispatch(url, init, made.init);
  }

  #dispatch(
    url: string,
    init: RequestInit,
    transportInit?: RequestInit,
  ): Promise<globalThis.Response> {
    const middlewares = this.#middlewares;
    // The default transport needs no Request of ours: fetch builds its own.
    if (!this.#fetch && middlewares.length === 0) {
      return fetch(url, transportInit ? { ...init, ...transportInit } : init);
    }
    const fetchImpl = this.#fetch ?? globalThis.fetch;
    const transport = (r: Request) => transportInit ? fetchImpl(r, transportInit) : fetchImpl(r);
    const run = (i: number, r: Request): Promise<globalThis.Response> =>
      i < middlewares.length ? middlewares[i](r, (next) => run(i + 1, next)) : transport(r);
    return run(0, new Request(url, init));
  }
}

/** One request between `Connection.begin` and `Connection.end`. */
export interface Exchange {
  /** When it was sent (`Date.now()`). */
  sent: number;
  /** Its clock, when the connection has a timeout. */
  pending?: Pending;
  /** Forwards the caller's abort to the request, while it is pending. */
  forward?: () => void;
  /** The caller's abort signal. */
  signal?: AbortSignal;
}

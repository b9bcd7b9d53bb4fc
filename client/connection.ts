/**
 * The HTTP connection under a `Client`: default headers, a middleware chain,
 * the fetch adapter, the per-request timeout, and (in Deno) an HTTP client for
 * a proxy or a TLS client certificate.
 * @module
 */
import { ConnectionError, describeCause } from "./error.ts";
import type { Logger } from "./logger.ts";

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

interface HttpClientLike {
  close(): void;
}
interface DenoHttpLike {
  createHttpClient?(options: Record<string, unknown>): HttpClientLike;
}

/** A signal that aborts after `ms`, and how to release its timer early. */
interface TimeoutSignal {
  signal: AbortSignal;
  cancel(): void;
}

/**
 * `AbortSignal.timeout` where it exists (its timer neither keeps the process
 * alive nor needs clearing, and costs half of a setTimeout/clearTimeout pair
 * per request); a cleared setTimeout elsewhere.
 */
function timeoutSignalFor(ms: number): AbortSignal | TimeoutSignal {
  if (typeof AbortSignal.timeout === "function") return AbortSignal.timeout(ms);
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException("The operation timed out", "TimeoutError")),
    ms,
  );
  return { signal: controller.signal, cancel: () => clearTimeout(timer) };
}

/** `AbortSignal.any`, or its equivalent where it is missing. */
function anySignal(signals: AbortSignal[]): AbortSignal {
  if (typeof AbortSignal.any === "function") return AbortSignal.any(signals);
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => controller.abort(s.reason), { once: true });
  }
  return controller.signal;
}

/** Builds the chain once; sends requests through it. */
export class Connection implements ConnectionBuilder {
  #middlewares: Middleware[] = [];
  #fetch: typeof fetch | undefined;
  #options: ConnectionOptions;
  #httpClient: HttpClientLike | undefined;
  #httpClientTried = false;
  #needsHttpClient: boolean;
  #logger: Logger;

  /**
   * Creates an instance.
   *
   * @param options connection options
   * @param logger where warnings go
   */
  constructor(options: ConnectionOptions, logger: Logger) {
    this.#options = options;
    this.#needsHttpClient = Boolean(options.proxy || options.cert || options.caCerts);
    this.#fetch = options.fetch;
    this.#logger = logger;
  }

  /** @inheritdoc */
  use(middleware: Middleware): ConnectionBuilder {
    if (typeof middleware !== "function") {
      throw new TypeError(`use: "middleware" must be a function, got ${typeof middleware}`);
    }
    this.#middlewares.push(middleware);
    return this;
  }

  /** @inheritdoc */
  adapter(fetchImpl: typeof fetch): ConnectionBuilder {
    if (typeof fetchImpl !== "function") {
      throw new TypeError(`adapter: "fetchImpl" must be a function, got ${typeof fetchImpl}`);
    }
    this.#fetch = fetchImpl;
    return this;
  }

  /** Default headers of every request. */
  get headers(): Record<string, string> {
    return this.#options.headers ?? {};
  }

  /** The timeout in milliseconds (0: none). */
  get timeout(): number {
    const t = this.#options.timeout ?? DEFAULT_TIMEOUT;
    return Number.isFinite(t) && t > 0 ? t : 0;
  }

  /** Whether a TLS client certificate is configured. */
  get hasClientCertificate(): boolean {
    return Boolean(this.#options.cert && this.#options.key);
  }

  /** Closes the Deno HTTP client if one was created (idle connections, proxy). */
  close(): void {
    this.#httpClient?.close();
    this.#httpClient = undefined;
    this.#httpClientTried = false;
  }

  #transportInit(): RequestInit | undefined {
    if (!this.#needsHttpClient) return undefined;
    const o = this.#options;
    if (!this.#httpClientTried) {
      this.#httpClientTried = true;
      const deno = (globalThis as { Deno?: DenoHttpLike }).Deno;
      if (typeof deno?.createHttpClient === "function") {
        const opts: Record<string, unknown> = {};
        if (o.proxy) opts.proxy = { url: o.proxy };
        if (o.cert || o.key) {
          opts.cert = o.cert;
          opts.key = o.key;
        }
        if (o.caCerts) opts.caCerts = o.caCerts;
        this.#httpClient = deno.createHttpClient(opts);
      } else if (!this.#fetch) {
        this.#logger.warn(
          "oauth2: connectionOpts.proxy/cert/key/caCerts need Deno.createHttpClient; " +
            "in this runtime pass connectionOpts.fetch that proxies or presents the certificate",
        );
      }
    }
    return this.#httpClient ? { client: this.#httpClient } as RequestInit : undefined;
  }

  /**
   * Sends a request through the middleware and the adapter (a `Request` is
   * built only when one of them needs it), reads the body, and enforces the
   * timeout.
   *
   * @param url the request URL
   * @param init method, headers, body, redirect mode (a fresh object: its signal is set here)
   * @param secrets values to keep out of error messages
   * @param signal the caller's abort signal
   * @returns the response and its body text
   * @throws {ConnectionError} on network failure, timeout or abort
   */
  async send(
    url: string,
    init: RequestInit,
    secrets: readonly (string | undefined)[],
    signal?: AbortSignal,
  ): Promise<{ response: globalThis.Response; body: string }> {
    const ms = this.timeout;
    const timeoutSignal = ms ? this.#timeoutSignal(ms) : undefined;
    const timeout = timeoutSignal instanceof AbortSignal ? timeoutSignal : timeoutSignal?.signal;
    const combined = timeout && signal ? anySignal([signal, timeout]) : timeout ?? signal;
    const method = init.method ?? "GET";
    try {
      if (signal?.aborted) throw signal.reason;
      if (combined) init.signal = combined; // init is the caller's fresh object: no copy
      const response = await this.#dispatch(url, init);
      const body = await response.text();
      return { response, body };
    } catch (cause) {
      if (timeout?.aborted && !signal?.aborted) {
        throw new ConnectionError(
          "timeout",
          method,
          url,
          `no response within the timeout of ${ms} ms (connectionOpts.timeout)`,
          cause,
          secrets,
        );
      }
      if (signal?.aborted) {
        throw new ConnectionError("aborted", method, url, "aborted", cause, secrets);
      }
      throw new ConnectionError(
        "network",
        method,
        url,
        describeCause(cause, secrets),
        cause,
        secrets,
      );
    } finally {
      if (timeoutSignal && !(timeoutSignal instanceof AbortSignal)) timeoutSignal.cancel();
    }
  }

  #shared?: { signal: AbortSignal; until: number };

  /**
   * A signal that aborts no sooner than `ms` from now and at most 1 % later.
   * Requests started within that 1 % share one `AbortSignal.timeout`: a token
   * request then pays for no timer of its own (the commonest cost the library
   * added to a fast request), and every request still gets at least its `ms`.
   */
  #timeoutSignal(ms: number): AbortSignal | TimeoutSignal {
    if (typeof AbortSignal.timeout !== "function") return timeoutSignalFor(ms);
    const now = Date.now();
    const shared = this.#shared;
    if (shared && now < shared.until && !shared.signal.aborted) return shared.signal;
    const slack = Math.max(1, Math.floor(ms / 100));
    const signal = AbortSignal.timeout(ms + slack);
    this.#shared = { signal, until: now + slack };
    return signal;
  }

  #dispatch(url: string, init: RequestInit): Promise<globalThis.Response> {
    const transportInit = this.#transportInit();
    const middlewares = this.#middlewares;
    if (!this.#fetch && middlewares.length === 0) {
      // The default transport needs no Request of ours: fetch builds its own.
      return fetch(url, transportInit ? { ...init, ...transportInit } : init);
    }
    const fetchImpl = this.#fetch ?? globalThis.fetch;
    const transport = (r: Request) => transportInit ? fetchImpl(r, transportInit) : fetchImpl(r);
    const request = new Request(url, init);
    if (middlewares.length === 0) return transport(request);
    const run = (i: number, r: Request): Promise<globalThis.Response> =>
      i < middlewares.length ? middlewares[i](r, (next) => run(i + 1, next)) : transport(r);
    return run(0, request);
  }
}

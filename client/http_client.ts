/**
 * Deno's HTTP client for a proxy, a TLS client certificate or extra CA
 * certificates (`Deno.createHttpClient`); loaded only by a connection that
 * has one of them.
 * @module
 */
import type { ConnectionOptions } from "./connection.ts";
import type { Logger } from "./logger.ts";

/** What a request needs to go through the HTTP client, and how to close it. */
export interface HttpClient {
  /** Merged into the fetch options (`{ client }`), when there is a client. */
  init?: RequestInit;
  /** Closes the client (its idle connections). */
  close(): void;
}

interface DenoHttp {
  createHttpClient?(options: Record<string, unknown>): { close(): void };
}

/**
 * Creates the HTTP client of `options`; outside Deno warns (once per
 * connection) unless the caller's own `fetch` handles the proxy or certificate.
 */
export function httpClientFor(
  options: ConnectionOptions,
  ownFetch: boolean,
  logger: Logger,
): HttpClient {
  const deno = (globalThis as { Deno?: DenoHttp }).Deno;
  if (typeof deno?.createHttpClient === "function") {
    const o: Record<string, unknown> = {};
    if (options.proxy) o.proxy = { url: options.proxy };
    if (options.cert || options.key) {
      o.cert = options.cert;
      o.key = options.key;
    }
    if (options.caCerts) o.caCerts = options.caCerts;
    const client = deno.createHttpClient(o);
    return { init: { client } as RequestInit, close: () => client.close() };
  }
  if (!ownFetch) {
    logger.warn(
      "oauth2: connectionOpts.proxy/cert/key/caCerts need Deno.createHttpClient; " +
        "in this runtime pass connectionOpts.fetch that proxies or presents the certificate",
    );
  }
  return { close() {} };
}

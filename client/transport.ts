/**
 * The road every request of a `Client` takes: URL resolution against the
 * site, headers and body, the debug log, the redirect loop and the rule that
 * credentials never follow a redirect to another origin (docs/client.md,
 * "Redirects and credentials"; the redirect step is in `redirect.ts`).
 * @module
 */
import { config, isRecord, mistyped } from "./config.ts";
import type { Connection } from "./connection.ts";
import type { Logger } from "./logger.ts";
import type { RequestOptions, Verb } from "./options.ts";
import { appendParams, formBody, resolveUrl, spacesAsPercent20, withQuery } from "./url.ts";
import type { RedactionFilter } from "./redact.ts";
import { checkHeaderNames } from "./validate_options.ts";
import type { Hop } from "./redirect.ts";

const VERBS = ["get", "post", "put", "patch", "delete", "head", "options"];
/** The HTTP method of each verb (no case conversion per request). */
const METHODS = /* @__PURE__ */ new Map(VERBS.map((v) => [v, v.toUpperCase()]));
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const FORM_TYPE = "application/x-www-form-urlencoded";
/**
 * Deno and Node give `redirect: "manual"` real 3xx responses, so the library
 * applies its own redirect rules there. Browsers and workers hand back an
 * opaque response instead: there the runtime follows redirects itself.
 */
const MANUAL_REDIRECTS = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined" ||
  typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions
      ?.node === "string";

/** What the transport needs of its client: fixed for the client's life. */
export interface TransportSettings {
  /** The provider's base URL. */
  site?: string;
  /** The client secret, redacted from every log line and error. */
  secret: string;
  /** The client's options, read on every request (they may be changed after creation). */
  options: { readonly maxRedirects: number; readonly raiseErrors: boolean };
  /** Whether requests and responses are logged. */
  debug: boolean;
  /** Where the debug log goes. */
  logger: Logger;
  /** More header names that are credentials. */
  credentialHeaders?: string[];
}

/** A request body: strings and bytes as given, records form-encoded or JSON by content type. */
function encodeBody(
  body: RequestOptions["body"],
  headers: Record<string, string>,
): BodyInit | undefined {
  if (body === undefined || body === null || typeof body === "string") return body;
  if (body instanceof Uint8Array) return body as Uint8Array<ArrayBuffer>;
  if (typeof body !== "object") {
    throw mistyped("request", "body", "a string, an object or bytes", body);
  }
  const type = headers["content-type"];
  if (type && type !== FORM_TYPE && /json/i.test(type)) return JSON.stringify(body);
  if (!type) headers["content-type"] = FORM_TYPE;
  return formBody(body);
}

/** Sends the requests of one client. */
export class Transport {
  #settings: TransportSettings;
  #connection: Connection;
  #resolved = new Map<string, string>();
  #secretOnly: readonly (string | undefined)[];
  /** The filtered label and keys when the client was made (the gem keeps them too). */
  readonly filter: RedactionFilter = {
    filteredLabel: config.filteredLabel,
    filteredDebugKeys: [...config.filteredDebugKeys],
  };
  /** Headers that are credentials whatever the caller says (never sent to another origin). */
  #credentialHeaders = new Set(["authorization", "proxy-authorization", "cookie", "dpop"]);

  /**
   * Creates an instance.
   *
   * @param settings the client's settings
   * @param connection the connection (middleware, adapter, timeout)
   */
  constructor(settings: TransportSettings, connection: Connection) {
    this.#settings = settings;
    this.#connection = connection;
    this.#secretOnly = [settings.secret];
    for (const h of settings.credentialHeaders ?? []) this.#credentialHeaders.add(h.toLowerCase());
  }

  /** Resolves `path` against `site` (cached: both are fixed for the client's life). */
  resolve(path: string, what: string): URL {
    let href = this.#resolved.get(path);
    if (href === undefined) {
      href = resolveUrl(this.#settings.site, path, what).href;
      if (this.#resolved.size < 64) this.#resolved.set(path, href);
    }
    return new URL(href);
  }

  /** `path` resolved against `site`, with `params` in its query. */
  endpoint(path: string, what: string, params?: Record<string, unknown>): string {
    if (!params || Object.keys(params).length === 0) {
      return this.#resolved.get(path) ?? this.resolve(path, what).href;
    }
    return withQuery(this.resolve(path, what), params);
  }

  /** Secrets this client knows, for redaction of errors and logs. */
  secrets(extra: readonly (string | undefined)[]): readonly (string | undefined)[] {
    return extra.length === 0 ? this.#secretOnly : [this.#settings.secret, ...extra];
  }

  #isCredentialHeader(name: string, opts: RequestOptions): boolean {
    return this.#credentialHeaders.has(name) ||
      !!opts.credentialHeaders?.some((m) => m.toLowerCase() === name);
  }

  /**
   * The redirect mode where the runtime follows redirects itself: "error"
   * when the request carries a credential it would resend (the body, or a
   * marked header other than `Authorization`, which fetch removes itself).
   */
  #followMode(credentialBody: boolean, headers: Record<string, string>, opts: RequestOptions) {
    if (credentialBody) return "error";
    for (const k in headers) {
      if (k !== "authorization" && this.#isCredentialHeader(k, opts)) return "error";
    }
    return "follow";
  }

  /**
   * Sends one request (see `Client.request`) and reads its answer: the road
   * of every request, whatever is made of the answer.
   *
   * @param verb the HTTP verb
   * @param url absolute, or resolved against `site`
   * @param opts request options
   * @param extraSecrets values to redact besides the client secret (tokens, the grant's secrets)
   * @param tokenEndpoint whether this is a token, revocation or similar request (its body is a credential)
   * @param bodyCredential whether the body carries a credential (a token in `mode: "body"`)
   * @returns the final response (after redirects) and its body text
   */
  async exchange(
    verb: Verb,
    url: string,
    opts: RequestOptions,
    extraSecrets: readonly (string | undefined)[],
    tokenEndpoint = false,
    bodyCredential = false,
  ): Promise<Answer> {
    const method = METHODS.get(verb) ??
      (typeof verb === "string" ? METHODS.get(verb.toLowerCase()) : undefined);
    if (!method) {
      throw new TypeError(
        `request: "verb" must be one of ${VERBS.join(", ")}, got ${String(verb)}`,
      );
    }
    if (typeof url !== "string") throw mistyped("request", "url", "a string", url);
    if (!isRecord(opts)) throw mistyped("request", "opts", "an object", opts);
    if (opts.credentialHeaders) checkHeaderNames(opts.credentialHeaders, "request");
    const secrets = this.secrets(extraSecrets);
    const settings = this.#settings;
    let target = this.#resolved.get(url);
    if (opts.params && Object.keys(opts.params).length > 0) {
      const withParams = this.resolve(url, "url");
      appendParams(withParams.searchParams, opts.params);
      spacesAsPercent20(withParams);
      target = withParams.href;
    } else target ??= this.resolve(url, "url").href;
    const defaults = this.#connection.headers;
    let headers = opts.headers ?? {};
    if (!tokenEndpoint || defaults) {
      // A token request's own record has its keys in lower case already; others are copied.
      const given = headers;
      headers = {};
      for (const k in defaults) headers[k.toLowerCase()] = defaults[k];
      for (const k in given) headers[k.toLowerCase()] = given[k];
    }
    // Where credentials travel, for the cross-origin rule (redirect.ts).
    const credentialBody = tokenEndpoint || bodyCredential;
    const hop: Hop = {
      url: target,
      method,
      headers,
      body: encodeBody(opts.body, headers),
      left: settings.options.maxRedirects,
    };
    while (true) {
      const log = settings.debug ? await import("./debug_log.ts") : undefined;
      log?.logRequest(
        settings.logger,
        hop.method,
        hop.url,
        headers,
        hop.body,
        secrets,
        this.filter,
      );
      const init: RequestInit = {
        method: hop.method,
        headers,
        body: hop.method === "GET" || hop.method === "HEAD" ? undefined : hop.body,
        redirect: MANUAL_REDIRECTS ? "manual" : this.#followMode(credentialBody, headers, opts),
      };
      // The request is awaited here, not in a method of the connection: one async call less.
      const connection = this.#connection;
      const exchange = connection.begin(opts.signal);
      let answer: Answer;
      try {
        const response = await connection.send(hop.url, init, exchange);
        answer = { response, text: await response.text(), secrets, sent: exchange.sent };
      } catch (cause) {
        throw await connection.failure(cause, exchange, hop.method, hop.url, secrets);
      } finally {
        connection.end(exchange);
      }
      const { response, text } = answer;
      log?.logResponse(
        settings.logger,
        response.status,
        hop.url,
        response.headers,
        text,
        secrets,
        this.filter,
      );
      if (REDIRECTS.has(response.status)) {
        // The rules of the next hop load with the first redirect (redirect.ts).
        const { nextHop } = await import("./redirect.ts");
        const isCredential = (name: string) => this.#isCredentialHeader(name, opts);
        if (!nextHop(hop, response, text, credentialBody, isCredential, secrets)) continue;
      }
      return answer;
    }
  }
}

/** What a request got: the final response, its body, and the secrets to redact from it. */
export interface Answer {
  /** The response (its body read). */
  response: globalThis.Response;
  /** The body text. */
  text: string;
  /** The client's secrets and the request's. */
  secrets?: readonly (string | undefined)[];
  /** When the request that got `response` was sent (`Date.now()`). */
  sent?: number;
}

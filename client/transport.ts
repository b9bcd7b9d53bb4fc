/**
 * The road every request of a `Client` takes: URL resolution against the
 * site, headers and body, the debug log, the redirect loop and the rule that
 * credentials never follow a redirect to another origin (docs/client.md,
 * "Redirects and credentials").
 * @module
 */
import { typeName } from "./config.ts";
import type { Connection } from "./connection.ts";
import { OAuthError } from "./error.ts";
import { type Logger, logRequest, logResponse } from "./logger.ts";
import type { RequestOptions, Verb } from "./options.ts";
import { OAuthResponse, type ResponseOptions } from "./response.ts";
import { appendParams, resolveUrl, spacesAsPercent20, withQuery } from "./url.ts";
import { currentFilter, type RedactionFilter } from "./redact.ts";
import { encodeBody } from "./client_helpers.ts";
import { checkHeaderNames } from "./validate_options.ts";

const VERBS = new Set(["get", "post", "put", "patch", "delete", "head", "options"]);
/** The HTTP method of each verb as the library spells it (no case conversion per request). */
const METHODS = new Map([...VERBS].map((v) => [v, v.toUpperCase()]));
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers that are credentials whatever the caller says (never sent to another origin). */
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie", "dpop"];

/**
 * Whether a query string or a form body carries one of `secrets` as a value;
 * any other text (JSON ...) counts when it contains a secret of 8 or more
 * characters (shorter ones would match by chance).
 */
function holdsSecret(text: string, secrets: readonly (string | undefined)[]): boolean {
  const values = new Set(new URLSearchParams(text).values());
  for (const s of secrets) {
    if (!s) continue;
    if (values.has(s)) return true;
    if (s.length >= 8 && text.includes(s)) return true;
  }
  return false;
}
function isEmpty(record: Record<string, string>): boolean {
  for (const _ in record) return false;
  return true;
}
const NO_PARSE_OPTIONS: Readonly<ResponseOptions> = Object.freeze({});
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

/** Sends the requests of one client. */
export class Transport {
  #settings: TransportSettings;
  #connection: Connection;
  #resolved = new Map<string, string>();

  /**
   * Creates an instance.
   *
   * @param settings the client's settings
   * @param connection the connection (middleware, adapter, timeout)
   */
  constructor(settings: TransportSettings, connection: Connection) {
    this.#settings = settings;
    this.#connection = connection;
    if (settings.credentialHeaders) {
      for (const h of settings.credentialHeaders) this.#credentialHeaders.add(h.toLowerCase());
    }
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

  #secretOnly?: readonly (string | undefined)[];
  /** The filtered label and keys when the client was made (the gem keeps them too). */
  #filter: RedactionFilter = currentFilter();
  #credentialHeaders = new Set(CREDENTIAL_HEADERS);

  /** Whether `headers` hold a header marked as a credential beyond those fetch drops itself. */
  #hasMarkedHeader(headers: Record<string, string>, opts: RequestOptions): boolean {
    for (const k in headers) {
      if (k !== "authorization" && this.#isCredentialHeader(k, opts)) return true;
    }
    return false;
  }

  #isCredentialHeader(name: string, opts: RequestOptions): boolean {
    if (this.#credentialHeaders.has(name)) return true;
    const marked = opts.credentialHeaders;
    if (!marked) return false;
    for (const m of marked) if (m.toLowerCase() === name) return true;
    return false;
  }

  /**
   * The cross-origin rule: credentials never follow a redirect to another
   * origin. Credential headers are removed (the request stays meaningful
   * without them, as `fetch` does for Authorization); a credential that
   * cannot be removed (in a body that the redirect would resend, or in the
   * query of the new location) makes the redirect an `OAuthError`
   * `cross_origin_redirect`, and nothing is sent there.
   */
  #crossOrigin(
    response: globalThis.Response,
    text: string,
    next: URL,
    method: string,
    body: BodyInit | undefined,
    credentialBody: boolean,
    headers: Record<string, string>,
    opts: RequestOptions,
    secrets: readonly (string | undefined)[],
  ): void {
    const resent = body !== undefined && method !== "GET" && method !== "HEAD";
    let where: string | undefined;
    if (resent && (credentialBody || (typeof body === "string" && holdsSecret(body, secrets)))) {
      where = "would resend the request body (which carries a credential) there";
    } else if (next.search && holdsSecret(next.search, secrets)) {
      where = "with a credential in the query of the new location";
    }
    if (where) {
      throw new OAuthError(new OAuthResponse(response, text), {
        code: "cross_origin_redirect",
        description: `the endpoint redirected to another origin (${next.origin}) ` +
          `with status ${response.status}, which ${where}`,
        secrets,
      });
    }
    for (const k in headers) {
      if (this.#isCredentialHeader(k, opts)) delete headers[k];
    }
  }

  /** Secrets this client knows, for redaction of errors and logs. */
  secrets(extra: readonly (string | undefined)[]): readonly (string | undefined)[] {
    if (extra.length === 0) return (this.#secretOnly ??= [this.#settings.secret]);
    return [this.#settings.secret, ...extra];
  }

  /** The filtered label and keys of the client's creation. */
  get filter(): RedactionFilter {
    return this.#filter;
  }

  /**
   * Sends one request (see `Client.request`).
   *
   * @param verb the HTTP verb
   * @param url absolute, or resolved against `site`
   * @param opts request options
   * @param extraSecrets values to redact besides the client secret (tokens, the grant's secrets)
   * @param tokenEndpoint whether this is a token, revocation or similar request (its body is a credential)
   * @param bodyCredential whether the body carries a credential (a token in `mode: "body"`)
   */
  async send(
    verb: Verb,
    url: string,
    opts: RequestOptions,
    extraSecrets: readonly (string | undefined)[],
    tokenEndpoint = false,
    bodyCredential = false,
  ): Promise<OAuthResponse> {
    let method = METHODS.get(verb);
    if (method === undefined && typeof verb === "string" && VERBS.has(verb.toLowerCase())) {
      method = verb.toUpperCase();
    }
    if (method === undefined) {
      throw new TypeError(
        `request: "verb" must be one of ${[...VERBS].join(", ")}, got ${String(verb)}`,
      );
    }
    if (typeof url !== "string") {
      throw new TypeError(`request: "url" must be a string, got ${typeName(url)}`);
    }
    if (!opts || typeof opts !== "object" || Array.isArray(opts)) {
      throw new TypeError(`request: "opts" must be an object, got ${typeName(opts)}`);
    }
    checkHeaderNames(opts.credentialHeaders, `request: "credentialHeaders"`);
    const secrets = this.secrets(extraSecrets);
    let target: string;
    if (opts.params && Object.keys(opts.params).length > 0) {
      const withParams = this.resolve(url, "url");
      appendParams(withParams.searchParams, opts.params);
      spacesAsPercent20(withParams);
      target = withParams.href;
    } else {
      target = this.#resolved.get(url) ?? this.resolve(url, "url").href;
    }
    const defaults = this.#connection.headers;
    const extra = opts.headers;
    let headers: Record<string, string>;
    if (tokenEndpoint && extra && isEmpty(defaults)) {
      headers = extra; // the token request's own record, keys already lower case
    } else {
      headers = {};
      for (const k in defaults) headers[k.toLowerCase()] = defaults[k];
      if (extra) { for (const k in extra) headers[k.toLowerCase()] = extra[k]; }
    }
    let body: BodyInit | undefined = encodeBody(opts.body, headers);
    let current = target;
    let redirectsLeft = this.#settings.options.maxRedirects;
    // Where credentials travel, for the cross-origin rule (see #crossOrigin).
    const credentialBody = tokenEndpoint || bodyCredential;
    while (true) {
      if (this.#settings.debug) {
        logRequest(this.#settings.logger, method, current, headers, body, secrets, this.#filter);
      }
      const { response, body: text } = await this.#connection.send(
        current,
        {
          method,
          headers,
          body: method === "GET" || method === "HEAD" ? undefined : body,
          redirect: MANUAL_REDIRECTS
            ? "manual"
            : credentialBody || this.#hasMarkedHeader(headers, opts)
            ? "error" // the runtime follows redirects itself and would resend these
            : "follow",
        },
        secrets,
        opts.signal,
      );
      if (this.#settings.debug) {
        const h = response.headers;
        logResponse(
          this.#settings.logger,
          response.status,
          current,
          h,
          text,
          secrets,
          this.#filter,
        );
      }
      if (REDIRECTS.has(response.status)) {
        // Past maxRedirects the redirect itself is the answer (as the gem does).
        if (redirectsLeft <= 0) return new OAuthResponse(response, text);
        const location = response.headers.get("location");
        if (!location) {
          throw new OAuthError(new OAuthResponse(response, text), {
            code: "redirect_without_location",
            description: `Got ${response.status} status code, but no Location header was present`,
            secrets,
          });
        }
        redirectsLeft--;
        const from = new URL(current);
        const next = new URL(location, from);
        if ((response.status === 302 || response.status === 303) && method !== "HEAD") {
          method = "GET";
          body = undefined;
          delete headers["content-type"];
        }
        if (next.origin !== from.origin) {
          this.#crossOrigin(
            response,
            text,
            next,
            method,
            body,
            credentialBody,
            headers,
            opts,
            secrets,
          );
        }
        current = next.href;
        continue;
      }
      const parsing = opts.parse === undefined && opts.snaky === undefined &&
          opts.snakyHashClass === undefined
        ? NO_PARSE_OPTIONS
        : { parse: opts.parse, snaky: opts.snaky, snakyHashClass: opts.snakyHashClass };
      const result = new OAuthResponse(response, text, parsing);
      if (response.status >= 400) {
        const error = new OAuthError(result, { secrets });
        if (opts.raiseErrors ?? this.#settings.options.raiseErrors) throw error;
        result.error = error;
      }
      return result;
    }
  }
}

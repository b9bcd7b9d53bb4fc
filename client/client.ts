/**
 * `Client`: the provider's endpoints, client authentication, the grant
 * strategies and raw requests (docs/client.md).
 * @module
 */
import type { AccessToken, AccessTokenOptions } from "./access_token.ts";
import { debugFromEnvironment, typeName } from "./config.ts";
import { Connection } from "./connection.ts";
import { OAuthError } from "./error.ts";
import { registerRequester } from "./internal.ts";
import { type Logger, logRequest, logResponse } from "./logger.ts";
import type { AuthScheme, ClientOptions, RequestOptions, TokenParams, Verb } from "./options.ts";
import { OAuthResponse, type ResponseOptions } from "./response.ts";
import { appendParams, resolveUrl, spacesAsPercent20, withQuery } from "./url.ts";
import { currentFilter, type RedactionFilter } from "./redact.ts";
import { tokenRequest } from "./token_request.ts";
import { AuthCode } from "./strategy/auth_code.ts";
import { Implicit } from "./strategy/implicit.ts";
import { Password } from "./strategy/password.ts";
import { ClientCredentials } from "./strategy/client_credentials.ts";
import { Assertion } from "./strategy/assertion.ts";
import { buildToken, encodeBody, redactOptions, tokenSecrets } from "./client_helpers.ts";
import { checkHeaderNames, validateClientArguments } from "./validate_options.ts";

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

/**
 * The client options after defaults.
 *
 * @example
 * ```ts
 * import { Client } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://id.example.com" });
 * console.log(client.options.tokenUrl); // "oauth/token"
 * ```
 */
export type ResolvedClientOptions =
  & Required<
    Pick<
      ClientOptions,
      | "authorizeUrl"
      | "tokenUrl"
      | "revokeUrl"
      | "tokenMethod"
      | "authScheme"
      | "raiseErrors"
      | "maxRedirects"
      | "connectionOpts"
    >
  >
  & Omit<ClientOptions, "logger">;

/**
 * An OAuth 2.0 client of one provider.
 *
 * @example
 * ```ts
 * import { Client } from "@authsvc/oauth2";
 * const client = new Client("my-app", "my-secret", {
 *   site: "https://id.example.com",
 *   authorizeUrl: "/oauth2/authorize",
 *   tokenUrl: "/oauth2/token",
 *   redirectUri: "https://app.example.com/callback",
 * });
 * console.log(client.tokenUrl()); // "https://id.example.com/oauth2/token"
 * ```
 */
export class Client {
  /** The client identifier. */
  readonly id: string;
  /** The provider's base URL. */
  readonly site?: string;
  /** Options after defaults. */
  readonly options: ResolvedClientOptions;
  /** Destination of debug output and warnings. */
  readonly logger: Logger;
  /** Whether requests and responses are logged. */
  readonly debug: boolean;
  #secret: string;
  #connection: Connection;
  #strategies: Record<string, unknown> = {};
  #resolved = new Map<string, string>();

  /**
   * Creates an instance.
   *
   * @param id client identifier
   * @param secret client secret ("" for public clients)
   * @param options see {@linkcode ClientOptions}
   * @throws {TypeError} when an argument or option has the wrong type
   */
  constructor(id: string, secret: string, options: ClientOptions = {}) {
    const conn = validateClientArguments(id, secret, options);
    this.id = id;
    this.#secret = secret;
    this.site = options.site;
    const { logger, ...rest } = options;
    this.options = {
      ...rest,
      authorizeUrl: options.authorizeUrl ?? "oauth/authorize",
      tokenUrl: options.tokenUrl ?? "oauth/token",
      revokeUrl: options.revokeUrl ?? "oauth/revoke",
      tokenMethod: options.tokenMethod ?? "post",
      authScheme: options.authScheme ?? "basic_auth",
      raiseErrors: options.raiseErrors ?? true,
      maxRedirects: options.maxRedirects ?? 5,
      connectionOpts: conn,
    };
    this.logger = logger ?? console;
    this.debug = options.debug ?? debugFromEnvironment();
    this.#connection = new Connection(conn, this.logger);
    options.connectionBuild?.(this.#connection);
    registerRequester(
      this,
      (verb, url, opts, secrets, bodyCredential) =>
        this.#request(verb, url, opts, secrets, false, bodyCredential),
    );
    if (options.credentialHeaders) {
      for (const h of options.credentialHeaders) this.#credentialHeaders.add(h.toLowerCase());
    }
  }

  /** The client secret. */
  get secret(): string {
    return this.#secret;
  }

  /**
   * The authorization endpoint with `params` in its query, and `redirect_uri`
   * when the client has a `redirectUri` (as the gem adds it; a `redirect_uri`
   * in `params` wins).
   */
  authorizeUrl(params?: Record<string, unknown>): string {
    const redirectUri = this.options.redirectUri;
    if (redirectUri && (!params || params.redirect_uri === undefined)) {
      params = { ...params, redirect_uri: redirectUri };
    }
    return this.#endpoint(this.options.authorizeUrl, "authorizeUrl", params);
  }

  /** The token endpoint with `params` in its query. */
  tokenUrl(params?: Record<string, unknown>): string {
    return this.#endpoint(this.options.tokenUrl, "tokenUrl", params);
  }

  /** The revocation endpoint with `params` in its query. */
  revokeUrl(params?: Record<string, unknown>): string {
    return this.#endpoint(this.options.revokeUrl, "revokeUrl", params);
  }

  /** Resolves `path` against `site` (cached: both are fixed for the client's life). */
  #resolve(path: string, what: string): URL {
    let href = this.#resolved.get(path);
    if (href === undefined) {
      href = resolveUrl(this.site, path, what).href;
      if (this.#resolved.size < 64) this.#resolved.set(path, href);
    }
    return new URL(href);
  }

  #endpoint(path: string, what: string, params?: Record<string, unknown>): string {
    if (!params || Object.keys(params).length === 0) {
      return this.#resolved.get(path) ?? this.#resolve(path, what).href;
    }
    return withQuery(this.#resolve(path, what), params);
  }

  /**
   * Sends a request: relative URLs resolve against `site`, redirects are
   * followed up to `maxRedirects` (302/303 become GET; past the limit the
   * redirect response is returned; one without `Location` is an `OAuthError`).
   * Credentials never follow a redirect to another origin: credential headers
   * (`Authorization`, `Proxy-Authorization`, `Cookie`, `DPoP` and those in
   * `credentialHeaders`) are removed, and a credential in a body the redirect
   * would resend, or in the new location's query, makes it an `OAuthError`
   * `cross_origin_redirect`.
   *
   * @throws {TypeError} for a bad verb, URL or options
   * @throws {OAuthError} for status 400 or above when errors are raised
   * @throws {ConnectionError} when no response arrives (network, timeout)
   */
  request(verb: Verb, url: string, opts: RequestOptions = {}): Promise<OAuthResponse> {
    return this.#request(verb, url, opts, []);
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
  #secrets(extra: readonly (string | undefined)[]): readonly (string | undefined)[] {
    if (extra.length === 0) return (this.#secretOnly ??= [this.#secret]);
    return [this.#secret, ...extra];
  }

  async #request(
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
    const secrets = this.#secrets(extraSecrets);
    let target: string;
    if (opts.params && Object.keys(opts.params).length > 0) {
      const withParams = this.#resolve(url, "url");
      appendParams(withParams.searchParams, opts.params);
      spacesAsPercent20(withParams);
      target = withParams.href;
    } else {
      target = this.#resolved.get(url) ?? this.#resolve(url, "url").href;
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
    let redirectsLeft = this.options.maxRedirects;
    // Where credentials travel, for the cross-origin rule (see #crossOrigin).
    const credentialBody = tokenEndpoint || bodyCredential;
    while (true) {
      if (this.debug) {
        logRequest(this.logger, method, current, headers, body, secrets, this.#filter);
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
      if (this.debug) {
        const h = response.headers;
        logResponse(this.logger, response.status, current, h, text, secrets, this.#filter);
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
        if (opts.raiseErrors ?? this.options.raiseErrors) throw error;
        result.error = error;
      }
      return result;
    }
  }

  /**
   * Requests a token with any grant (`params.grant_type`) and builds the
   * `AccessToken`. `params` may carry `headers`, `snaky`, `snakyHashClass`,
   * `parse` and any wire parameter (`resource`, `scope` ...).
   *
   * @throws {OAuthError} when the provider answers with an error or without a token
   */
  async getToken(
    params: TokenParams,
    accessTokenOpts: AccessTokenOptions = {},
  ): Promise<AccessToken> {
    if (!params || typeof params !== "object" || Array.isArray(params)) {
      throw new TypeError(`getToken: "params" must be an object, got ${typeName(params)}`);
    }
    if (!accessTokenOpts || typeof accessTokenOpts !== "object") {
      throw new TypeError(`getToken: "accessTokenOpts" must be an object`);
    }
    const secrets = tokenSecrets(params);
    const response = await tokenRequest(
      this,
      this.tokenUrl(),
      params,
      (v, u, o) => {
        o.raiseErrors = false;
        return this.#request(v, u, o, secrets, true);
      },
    );
    const token = buildToken(this, response, accessTokenOpts, this.#secrets(secrets));
    if (this.options.verifyToken) {
      await this.options.verifyToken(token, { client: this, params, response });
    }
    return token;
  }

  /**
   * Builds a client from the provider's metadata: OpenID Connect discovery
   * (`<issuer>/.well-known/openid-configuration`), else RFC 8414
   * (`/.well-known/oauth-authorization-server<issuer path>`). The metadata's
   * `issuer` must equal `issuer`; the endpoints fill `authorizeUrl`,
   * `tokenUrl`, `revokeUrl`, `issuer`, `jwksUri`, `userinfoUrl`,
   * `introspectionUrl`, `parUrl` and `deviceAuthorizationUrl` (options given
   * in `options` win).
   *
   * @throws {OAuthError} when no metadata is found or its issuer differs (`invalid_issuer`)
   */
  static async discover(
    issuer: string,
    id: string,
    secret: string,
    options: ClientOptions = {},
  ): Promise<Client> {
    if (typeof issuer !== "string") {
      throw new TypeError(`discover: "issuer" must be a string, got ${typeName(issuer)}`);
    }
    const probe = new Client(id, secret, { ...options, site: issuer });
    const base = new URL(issuer);
    const path = base.pathname.replace(/\/$/, "");
    let response: OAuthResponse | undefined;
    try {
      for (
        const url of [
          `${base.origin}${path}/.well-known/openid-configuration`,
          `${base.origin}/.well-known/oauth-authorization-server${path}`,
        ]
      ) {
        response = await probe.request("get", url, {
          raiseErrors: false,
          headers: { accept: "application/json" },
        });
        if (response.status === 200 && response.parsedHash) break;
      }
    } finally {
      probe.close();
    }
    const md = response!.parsedHash;
    if (response!.status !== 200 || !md) {
      throw new OAuthError(response!, {
        code: "discovery_failed",
        description: `no provider metadata for ${issuer}`,
      });
    }
    if (md.issuer !== issuer) {
      throw new OAuthError(response!, {
        code: "invalid_issuer",
        description: `the metadata's issuer ${JSON.stringify(md.issuer)} is not ${issuer}`,
      });
    }
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    const found: ClientOptions = {
      authorizeUrl: str(md.authorization_endpoint),
      tokenUrl: str(md.token_endpoint),
      revokeUrl: str(md.revocation_endpoint),
      issuer,
      jwksUri: str(md.jwks_uri),
      userinfoUrl: str(md.userinfo_endpoint),
      introspectionUrl: str(md.introspection_endpoint),
      parUrl: str(md.pushed_authorization_request_endpoint),
      deviceAuthorizationUrl: str(md.device_authorization_endpoint),
      metadata: md,
    };
    const merged: ClientOptions = { site: issuer };
    for (const [k, v] of Object.entries(found)) {
      if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
    }
    return new Client(id, secret, { ...merged, ...options });
  }

  /**
   * Revokes a token at `revokeUrl` (RFC 7009) with the client's authentication.
   *
   * @throws {OAuthError} when the provider refuses (and errors are raised)
   */
  revokeToken(
    token: string,
    tokenTypeHint?: "access_token" | "refresh_token",
    params: Record<string, unknown> = {},
  ): Promise<OAuthResponse> {
    if (typeof token !== "string" || token === "") {
      return Promise.reject(new TypeError(`revokeToken: "token" must be a non-empty string`));
    }
    const wire: TokenParams = { ...params, token };
    if (tokenTypeHint) wire.token_type_hint = tokenTypeHint;
    return tokenRequest(
      this,
      this.revokeUrl(),
      wire,
      (v, u, o) => this.#request(v, u, o, [token], true),
      "post",
    );
  }

  /** The configured client authentication. */
  get authScheme(): AuthScheme {
    return this.options.authScheme;
  }

  /** The authorization code grant (with PKCE). */
  get authCode(): AuthCode {
    return (this.#strategies.authCode ??= new AuthCode(this)) as AuthCode;
  }
  /** The implicit grant (authorize URL only; read the callback with `AccessToken.fromKvform`). */
  get implicit(): Implicit {
    return (this.#strategies.implicit ??= new Implicit(this)) as Implicit;
  }
  /** The resource owner password credentials grant. */
  get password(): Password {
    return (this.#strategies.password ??= new Password(this)) as Password;
  }
  /** The client credentials grant. */
  get clientCredentials(): ClientCredentials {
    return (this.#strategies.clientCredentials ??= new ClientCredentials(
      this,
    )) as ClientCredentials;
  }
  /** The JWT bearer assertion grant (RFC 7523 §2.1). */
  get assertion(): Assertion {
    return (this.#strategies.assertion ??= new Assertion(this)) as Assertion;
  }

  /** Closes the Deno HTTP client of a proxy or client certificate, if any. */
  close(): void {
    this.#connection.close();
  }

  #redacted(): Record<string, unknown> {
    return {
      id: this.id,
      secret: this.#secret ? this.#filter.label : "",
      site: this.site,
      options: redactOptions(this.options),
    };
  }

  /** `JSON.stringify` never shows the secret. */
  toJSON(): Record<string, unknown> {
    return this.#redacted();
  }

  /** Deno.inspect / console.log in Deno: secret shown as the filtered label. */
  [Symbol.for("Deno.customInspect")](
    inspect: (value: unknown, options?: unknown) => string,
    options: unknown,
  ): string {
    return `Client ${inspect(this.#redacted(), options)}`;
  }

  /** util.inspect / console.log in Node: secret shown as the filtered label. */
  [Symbol.for("nodejs.util.inspect.custom")](
    _depth: number,
    options: unknown,
    inspect: (value: unknown, options?: unknown) => string,
  ): string {
    return `Client ${inspect(this.#redacted(), options)}`;
  }
}

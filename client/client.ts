/**
 * `Client`: the provider's endpoints, client authentication, the grant
 * strategies and raw requests (docs/client.md).
 * @module
 */
import type { AccessToken, AccessTokenOptions } from "./access_token.ts";
import { debugFromEnvironment, typeName } from "./config.ts";
import { Connection } from "./connection.ts";
import { registerRequester } from "./internal.ts";
import type { Logger } from "./logger.ts";
import type { AuthScheme, ClientOptions, RequestOptions, TokenParams, Verb } from "./options.ts";
import type { OAuthResponse } from "./response.ts";
import { tokenRequest } from "./token_request.ts";
import { Transport } from "./transport.ts";
import { discoverMetadata } from "./discovery.ts";
import { AuthCode } from "./strategy/auth_code.ts";
import { Implicit } from "./strategy/implicit.ts";
import { Password } from "./strategy/password.ts";
import { ClientCredentials } from "./strategy/client_credentials.ts";
import { Assertion } from "./strategy/assertion.ts";
import { buildToken, redactOptions, tokenSecrets } from "./client_helpers.ts";
import { validateClientArguments } from "./validate_options.ts";

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
  #transport: Transport;
  #strategies: Record<string, unknown> = {};

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
    const transport = new Transport({
      site: this.site,
      secret,
      options: this.options,
      debug: this.debug,
      logger: this.logger,
      credentialHeaders: options.credentialHeaders,
    }, this.#connection);
    this.#transport = transport;
    registerRequester(
      this,
      (verb, url, opts, secrets, bodyCredential) =>
        transport.send(verb, url, opts, secrets, false, bodyCredential),
    );
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
    return this.#transport.endpoint(this.options.authorizeUrl, "authorizeUrl", params);
  }

  /** The token endpoint with `params` in its query. */
  tokenUrl(params?: Record<string, unknown>): string {
    return this.#transport.endpoint(this.options.tokenUrl, "tokenUrl", params);
  }

  /** The revocation endpoint with `params` in its query. */
  revokeUrl(params?: Record<string, unknown>): string {
    return this.#transport.endpoint(this.options.revokeUrl, "revokeUrl", params);
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
    return this.#transport.send(verb, url, opts, []);
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
        return this.#transport.send(v, u, o, secrets, true);
      },
    );
    const token = buildToken(this, response, accessTokenOpts, this.#transport.secrets(secrets));
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
    let found: ClientOptions;
    try {
      found = await discoverMetadata(probe, issuer);
    } finally {
      probe.close();
    }
    return new Client(id, secret, { ...found, ...options });
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
      (v, u, o) => this.#transport.send(v, u, o, [token], true),
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
      secret: this.#secret ? this.#transport.filter.label : "",
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

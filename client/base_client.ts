/**
 * `BaseClient`: a client of one provider with its endpoints, client
 * authentication and token requests whose answer is the token response as a
 * plain record; `Client` adds the Ruby gem's object model on top (docs/client.md,
 * "Size"). Nothing here loads the error classes, redaction or `OAuthResponse`
 * before a request fails: an application that needs no more ships no more.
 * @module
 */
import { config, debugFromEnvironment, isRecord, mistyped } from "./config.ts";
import { Connection } from "./connection.ts";
import { inspectAs } from "./inspect.ts";
import { registerTransport } from "./internal.ts";
import type { Logger } from "./logger.ts";
import type { AuthScheme, ClientOptions, TokenParams } from "./options.ts";
import { tokenAnswer, tokenError, tokenHash, unconstrained } from "./token_response.ts";
import { TOKEN_KEYS } from "./token_options.ts";
import { Transport } from "./transport.ts";
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
 * A token response as the provider sent it (keys in snake_case unless
 * `snaky: false` was asked), checked: it holds a token, and a
 * sender-constrained one where the client needs one.
 *
 * @example
 * ```ts
 * import type { TokenResponse } from "@authsvc/oauth2";
 * const saved: TokenResponse = { access_token: "at", token_type: "Bearer", expires_in: 3600, refresh_token: "rt" };
 * console.log(saved.refresh_token);
 * ```
 */
export interface TokenResponse {
  /** The access token. */
  access_token?: string;
  /** `Bearer` or `DPoP`. */
  token_type?: string;
  /** Seconds until the access token expires (some providers send a string). */
  expires_in?: number | string;
  /** The refresh token, when the provider issued one. */
  refresh_token?: string;
  /** The granted scope. */
  scope?: string;
  /** The ID token (OpenID Connect). */
  id_token?: string;
  /** Any other field of the response. */
  [field: string]: unknown;
}

/**
 * A client of one provider: endpoints, client authentication (`basic_auth`,
 * `request_body`, `private_key_jwt`, `tls_client_auth`) and token requests
 * answered with the token response itself ({@linkcode BaseClient.requestToken}).
 * `Client` extends it with the grant strategies, `AccessToken`s and raw
 * requests; an application that needs only token requests ships less with
 * `BaseClient`.
 *
 * @example Authorization code with PKCE, then a refresh
 * ```ts ignore
 * import { BaseClient, generatePkce } from "@authsvc/oauth2";
 * const client = new BaseClient("spa", "", { site: "https://id.example.com", redirectUri: "https://app.example.com/cb" });
 * const pkce = await generatePkce();
 * location.href = client.authorizeUrl({ response_type: "code", client_id: client.id, scope: "openid",
 *   code_challenge: pkce.codeChallenge, code_challenge_method: "S256" });
 * // on the callback page, with ?code=...
 * const tokens = await client.requestToken({ grant_type: "authorization_code", code, code_verifier: pkce.codeVerifier });
 * const fresh = await client.requestToken({ grant_type: "refresh_token", refresh_token: tokens.refresh_token });
 * ```
 */
export class BaseClient {
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
    inspectAs(BaseClient, (c) => c.#redacted());
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
    this.#transport = new Transport({
      site: this.site,
      secret,
      options: this.options,
      debug: this.debug,
      logger: this.logger,
      credentialHeaders: options.credentialHeaders,
    }, this.#connection);
    registerTransport(this, this.#transport);
  }

  /** The client secret. */
  get secret(): string {
    return this.#secret;
  }

  /** The configured client authentication. */
  get authScheme(): AuthScheme {
    return this.options.authScheme;
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
   * Requests a token with any grant (`params.grant_type`; `params` may carry
   * `headers`, `parse`, `snaky`, `signal` and any wire parameter) and returns
   * the token response. The same request as `Client.getToken` (client
   * authentication, redirects and the cross-origin rule, the FAPI 2.0 and
   * DPoP checks) without building an `AccessToken`; a client with
   * `verifyToken` needs `getToken`, which calls it.
   *
   * @throws {TypeError} for bad params, or a client with `verifyToken`
   * @throws {OAuthError} when the provider answers with an error or without a token
   * @throws {ConnectionError} when no response arrives
   *
   * @example
   * ```ts ignore
   * import { BaseClient } from "@authsvc/oauth2";
   * const client = new BaseClient("service", "secret", { site: "https://id.example.com" });
   * const { access_token, expires_in } = await client.requestToken({ grant_type: "client_credentials", scope: "api:read" });
   * ```
   */
  async requestToken(params: TokenParams): Promise<TokenResponse> {
    if (!isRecord(params)) throw mistyped("requestToken", "params", "an object", params);
    if (this.options.verifyToken) {
      throw new TypeError(
        `requestToken: the client has "verifyToken" (e.g. idTokenVerifier()), which checks ` +
          `an AccessToken: use Client.getToken`,
      );
    }
    const answer = await tokenAnswer(this, params);
    const hash = tokenHash(answer, params);
    if (typeof hash === "string") throw await tokenError(answer, params, hash || undefined);
    if (hash.refresh_token == null && !TOKEN_KEYS.some((k) => hash[k] != null)) {
      throw await tokenError(answer, params, "the token response holds no access token");
    }
    const refused = unconstrained(this, answer, hash.token_type);
    if (refused) throw await tokenError(answer, params, refused, "invalid_token_type");
    return hash;
  }

  /** Closes the Deno HTTP client of a proxy or client certificate, if any. */
  close(): void {
    this.#connection.close();
  }

  /** What `JSON.stringify` and the inspect hooks show: the secrets as the filtered label. */
  #redacted(): Record<string, unknown> {
    const label = this.#transport.filter.filteredLabel;
    const { clientAssertionKey, connectionOpts, ...rest } = this.options;
    const { key, ...conn } = connectionOpts;
    // The assertion key and the TLS key are secrets as much as the client secret.
    return {
      id: this.id,
      secret: this.#secret ? label : "",
      site: this.site,
      options: {
        ...rest,
        ...(clientAssertionKey ? { clientAssertionKey: config.filteredLabel } : {}),
        connectionOpts: { ...conn, ...(key ? { key: config.filteredLabel } : {}) },
      },
    };
  }

  /** `JSON.stringify` never shows the secret. */
  toJSON(): Record<string, unknown> {
    return this.#redacted();
  }

  /** The class name, shown by the inspect hooks (it survives minification). */
  get [Symbol.toStringTag](): string {
    return "BaseClient";
  }
}

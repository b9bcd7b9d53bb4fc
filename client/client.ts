/**
 * `Client`: the provider's endpoints, client authentication, the grant
 * strategies, `AccessToken`s and raw requests (docs/client.md).
 * @module
 */
import type { AccessToken, AccessTokenOptions } from "./access_token.ts";
import { tokenOfResponse } from "./access_token.ts";
import { BaseClient, type ResolvedClientOptions } from "./base_client.ts";
import { isRecord, mistyped } from "./config.ts";
import { transportOf } from "./internal.ts";
import type { ClientOptions, RequestOptions, TokenParams, Verb } from "./options.ts";
import { sendRequest } from "./request.ts";
import type { OAuthResponse } from "./response.ts";
import { tokenRequest } from "./token_request.ts";
import { tokenAnswer, tokenError, tokenHash, unconstrained } from "./token_response.ts";
import { AuthCode } from "./strategy/auth_code.ts";
import { Implicit } from "./strategy/implicit.ts";
import { Password } from "./strategy/password.ts";
import { ClientCredentials } from "./strategy/client_credentials.ts";
import { Assertion } from "./strategy/assertion.ts";

export type { ResolvedClientOptions };

const NO_OPTIONS: AccessTokenOptions = /* @__PURE__ */ Object.freeze({});

/**
 * An OAuth 2.0 client of one provider: a {@linkcode BaseClient} with the grant
 * strategies, `AccessToken`s and raw requests.
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
export class Client extends BaseClient {
  #strategies: Record<string, unknown> = {};

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
    return sendRequest(transportOf(this)!, this.options.raiseErrors, verb, url, opts, []);
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
    accessTokenOpts: AccessTokenOptions = NO_OPTIONS,
  ): Promise<AccessToken> {
    if (!isRecord(params)) throw mistyped("getToken", "params", "an object", params);
    if (!accessTokenOpts || typeof accessTokenOpts !== "object") {
      throw mistyped("getToken", "accessTokenOpts", "an object", accessTokenOpts);
    }
    const answer = await tokenAnswer(this, params);
    const hash = tokenHash(answer, params);
    if (typeof hash === "string") throw await tokenError(answer, params, hash || undefined);
    for (const k in accessTokenOpts) hash[k] = accessTokenOpts[k];
    const token = tokenOfResponse(this, hash, answer, params);
    if (!token.token && !token.refreshToken) {
      throw await tokenError(answer, params, "the token response holds no access token");
    }
    const refused = unconstrained(this, answer, hash.token_type);
    if (refused) throw await tokenError(answer, params, refused, "invalid_token_type");
    const verify = this.options.verifyToken;
    if (verify) await verify(token, { client: this, params, response: token.response! });
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
    if (typeof issuer !== "string") throw mistyped("discover", "issuer", "a string", issuer);
    const probe = new Client(id, secret, { ...options, site: issuer });
    let found: ClientOptions;
    try {
      found = await (await import("./discovery.ts")).discoverMetadata(probe, issuer);
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
      return Promise.reject(mistyped("revokeToken", "token", "a non-empty string", token));
    }
    const wire: TokenParams = { ...params, token };
    if (tokenTypeHint) wire.token_type_hint = tokenTypeHint;
    const transport = transportOf(this)!;
    return tokenRequest(
      this,
      this.revokeUrl(),
      wire,
      (v, u, o) => sendRequest(transport, this.options.raiseErrors, v, u, o, [token], true),
      "post",
    );
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

  /** The class name, shown by the inspect hooks (it survives minification). */
  override get [Symbol.toStringTag](): string {
    return "Client";
  }
}

/** Option types of `Client` and its requests. @module */
import type { ConnectionBuilder, ConnectionOptions } from "./connection.ts";
import type { Logger } from "./logger.ts";
import type { ParseOption } from "./response.ts";
import type { SnakyHash } from "./snaky_hash.ts";
import type { Jwk } from "./jwt.ts";
import type { AccessToken } from "./access_token.ts";
import type { Client } from "./client.ts";
import type { OAuthResponse } from "./response.ts";

/**
 * How the client authenticates at the token and revocation endpoints.
 *
 * @example
 * ```ts
 * import { type AuthScheme, Client } from "@authsvc/oauth2";
 * const scheme: AuthScheme = "request_body"; // client_id and client_secret in the form
 * new Client("id", "secret", { site: "https://id.example.com", authScheme: scheme });
 * ```
 */
export type AuthScheme = "basic_auth" | "request_body" | "tls_client_auth" | "private_key_jwt";

/**
 * How the token request is sent.
 *
 * @example
 * ```ts
 * import { Client, type TokenMethod } from "@authsvc/oauth2";
 * const tokenMethod: TokenMethod = "post_with_query_string";
 * new Client("id", "secret", { site: "https://id.example.com", tokenMethod });
 * ```
 */
export type TokenMethod = "post" | "get" | "post_with_query_string";

/**
 * HTTP verbs accepted by `request`.
 *
 * @example
 * ```ts
 * import { Client, type Verb } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const verb: Verb = "patch";
 * const send = () => client.request(verb, "/things/1", { body: { name: "new" } });
 * console.log(typeof send);
 * ```
 */
export type Verb = "get" | "post" | "put" | "patch" | "delete" | "head" | "options";

/**
 * Options of `new Client(id, secret, options)` (docs/client.md).
 *
 * @example
 * ```ts
 * import { Client, type ClientOptions } from "@authsvc/oauth2";
 * const options: ClientOptions = {
 *   site: "https://id.example.com",
 *   authScheme: "private_key_jwt",
 *   clientAssertionKey: "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
 *   clientAssertionAlg: "ES256",
 *   connectionOpts: { timeout: 10_000, headers: { "User-Agent": "my-app/1.0" } },
 * };
 * console.log(typeof Client, options.site);
 * ```
 */
export interface ClientOptions {
  /** Base URL of the provider. */
  site?: string;
  /** Authorization endpoint; default `"oauth/authorize"`. */
  authorizeUrl?: string;
  /** Token endpoint; default `"oauth/token"`. */
  tokenUrl?: string;
  /** Revocation endpoint (RFC 7009); default `"oauth/revoke"`. */
  revokeUrl?: string;
  /** How token requests are sent; default `"post"`. */
  tokenMethod?: TokenMethod;
  /** Client authentication; default `"basic_auth"`. */
  authScheme?: AuthScheme;
  /** Options of the underlying connection. */
  connectionOpts?: ConnectionOptions;
  /** Throw `OAuthError` for status 400 or above; default true. */
  raiseErrors?: boolean;
  /** Redirects followed per request; default 5. */
  maxRedirects?: number;
  /** Destination of debug output and warnings; default `console`. */
  logger?: Logger;
  /** Sent as `redirect_uri` where a grant needs one. */
  redirectUri?: string;
  /** `private_key_jwt` signing key (CryptoKey, JWK or PKCS#8 PEM). */
  clientAssertionKey?: CryptoKey | Jwk | string;
  /** `private_key_jwt` algorithm; default `"RS256"` (or the JWK's `alg`). */
  clientAssertionAlg?: string;
  /** Receives the connection builder to add middleware and choose an adapter. */
  connectionBuild?: (builder: ConnectionBuilder) => void;
  /** Log requests and responses; default: `OAUTH_DEBUG=true` in the environment. */
  debug?: boolean;
  /**
   * More header names that are credentials (e.g. `["X-Api-Key"]`): like
   * `Authorization`, `Proxy-Authorization`, `Cookie` and `DPoP`, they are
   * removed when a redirect leads to another origin.
   */
  credentialHeaders?: string[];
  /** The issuer (OpenID Connect / RFC 8414); `Client.discover` sets it. ID tokens must carry it. */
  issuer?: string;
  /** The provider's JWKS URL (ID token signatures); `Client.discover` sets it. */
  jwksUri?: string;
  /** UserInfo endpoint; `Client.discover` sets it. */
  userinfoUrl?: string;
  /** Token introspection endpoint (RFC 7662); `Client.discover` sets it. */
  introspectionUrl?: string;
  /** Pushed authorization request endpoint (RFC 9126); `Client.discover` sets it. */
  parUrl?: string;
  /** Device authorization endpoint (RFC 8628); `Client.discover` sets it. */
  deviceAuthorizationUrl?: string;
  /** Backchannel authentication endpoint (OpenID CIBA); `Client.discover` sets it. */
  backchannelAuthenticationUrl?: string;
  /** The provider metadata `Client.discover` read. */
  metadata?: Record<string, unknown>;
  /**
   * Checks every token a token request returns before it is handed out
   * (`idTokenVerifier()` of `@authsvc/oauth2/oidc` validates the ID token and
   * sets `token.idTokenClaims`); a rejection fails the token request.
   */
  verifyToken?: (token: AccessToken, context: VerifyTokenContext) => Promise<void> | void;
  /**
   * Opt-in: a request with an expired token that has a refresh token first
   * refreshes it (one refresh for concurrent requests) and updates the token
   * in place.
   */
  autoRefresh?: boolean;
  /**
   * `"fapi2"`: keep the rules the FAPI 2.0 Security Profile sets for clients
   * (docs/client.md, "FAPI 2.0"): authorization requests only through PAR,
   * `iss` required in the authorization response, sender-constrained tokens
   * (DPoP or a TLS client certificate), tokens only in the Authorization
   * header, and only PS256, ES256 or EdDSA signatures.
   */
  profile?: "fapi2";
  /** Called once per automatic refresh with the updated token (persist `token.toHash()`). */
  onRefresh?: (token: AccessToken) => void | Promise<void>;
}

/**
 * What `ClientOptions.verifyToken` gets besides the token.
 *
 * @example
 * ```ts
 * import { Client, type VerifyTokenContext } from "@authsvc/oauth2";
 * new Client("id", "secret", {
 *   verifyToken: (token, ctx: VerifyTokenContext) => {
 *     if (ctx.params.grant_type === "client_credentials" && !token.params.scope) {
 *       throw new Error("no scope granted");
 *     }
 *   },
 * });
 * ```
 */
export interface VerifyTokenContext {
  /** The client. */
  client: Client;
  /** The token request's parameters (wire and library keys, e.g. `idToken.nonce`). */
  params: TokenParams;
  /** The token response. */
  response: OAuthResponse;
}

/**
 * Options of `Client.request` and `AccessToken.request`.
 *
 * @example
 * ```ts
 * import { Client, type RequestOptions } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const opts: RequestOptions = { params: { page: 2 }, headers: { Accept: "application/json" }, raiseErrors: false };
 * const load = () => client.request("get", "/items", opts);
 * console.log(typeof load);
 * ```
 */
export interface RequestOptions {
  /** Query parameters (arrays repeat the key). */
  params?: Record<string, string | number | boolean | string[]>;
  /** Request headers. */
  headers?: Record<string, string>;
  /** A record is form-encoded unless the content type says JSON. */
  body?: string | Record<string, unknown> | Uint8Array;
  /** Overrides the client's `raiseErrors` for this request. */
  raiseErrors?: boolean;
  /** snake_case keys in `parsed`; default true. */
  snaky?: boolean;
  /** How to parse the body; default `"automatic"`. */
  parse?: ParseOption;
  /** Class for the parsed hash. */
  snakyHashClass?: typeof SnakyHash;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** Header names of this request that are credentials (removed on a cross-origin redirect). */
  credentialHeaders?: string[];
}

/**
 * Parameters of a token request: wire parameters plus the library's own keys.
 *
 * @example
 * ```ts
 * import { Client, type TokenParams } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://id.example.com" });
 * const params: TokenParams = {
 *   grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
 *   subject_token: "eyJ...",
 *   subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
 *   resource: "https://api.example.com",
 *   headers: { "X-Request-Id": "42" },
 * };
 * const exchange = () => client.getToken(params);
 * console.log(typeof exchange);
 * ```
 */
export interface TokenParams {
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** snake_case keys in the parsed response; default true. */
  snaky?: boolean;
  /** Class for the parsed response. */
  snakyHashClass?: typeof SnakyHash;
  /** How to parse the body; default `"automatic"`. */
  parse?: ParseOption;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** What the ID token must match (checked by an `idTokenVerifier()`; not sent). */
  idToken?: { nonce?: string; maxAge?: number };
  /** Any wire parameter (`grant_type`, `resource`, `scope`, `audience` ...). */
  [param: string]: unknown;
}

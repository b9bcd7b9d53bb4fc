/** Option types of `Client` and its requests. @module */
import type { ConnectionBuilder, ConnectionOptions } from "./connection.ts";
import type { Logger } from "./logger.ts";
import type { ParseMode } from "./response.ts";
import type { SnakyHash } from "./snaky_hash.ts";
import type { Jwk } from "./jwt.ts";

/** How the client authenticates at the token and revocation endpoints. */
export type AuthScheme = "basic_auth" | "request_body" | "tls_client_auth" | "private_key_jwt";

/** How the token request is sent. */
export type TokenMethod = "post" | "get" | "post_with_query_string";

/** HTTP verbs accepted by `request`. */
export type Verb = "get" | "post" | "put" | "patch" | "delete" | "head" | "options";

/** Options of `new Client(id, secret, options)` (spec 2.1). */
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
}

/** Options of `Client.request` and `AccessToken.request`. */
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
  parse?: ParseMode;
  /** Class for the parsed hash. */
  snakyHashClass?: typeof SnakyHash;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** Parameters of a token request: wire parameters plus the library's own keys. */
export interface TokenParams {
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** snake_case keys in the parsed response; default true. */
  snaky?: boolean;
  /** Class for the parsed response. */
  snakyHashClass?: typeof SnakyHash;
  /** How to parse the body; default `"automatic"`. */
  parse?: ParseMode;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** Any wire parameter (`grant_type`, `resource`, `scope`, `audience` ...). */
  [param: string]: unknown;
}

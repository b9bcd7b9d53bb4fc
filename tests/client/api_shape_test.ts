/**
 * The public TypeScript surface of mod.ts, written out name by name as the
 * client API was designed: code written against it must type-check against mod.ts
 * (`deno test` type-checks this file), and every member must exist at run time.
 */
import assert from "node:assert/strict";
import {
  AccessToken,
  type AccessTokenOptions,
  Client,
  type ClientOptions,
  config,
  configure,
  type ConnectionBuilder,
  type ConnectionOptions,
  generatePkce,
  type Logger,
  type Middleware,
  type OAuth2Config,
  OAuthError,
  OAuthResponse,
  type RequestOptions,
  type Response,
  Response as ResponseValue,
  Serializer,
  SnakyHash,
} from "../../mod.ts";

/** True when A has every key of B (so no spec name is missing). */
type HasKeys<A, B> = [Exclude<keyof B, keyof A>] extends [never] ? true : Exclude<keyof B, keyof A>;
const keys = <T extends true>(): T | undefined => undefined;

// ClientOptions and ConnectionOptions, as the page writes them.
interface SpecClientOptions {
  site?: string;
  authorizeUrl?: string;
  tokenUrl?: string;
  revokeUrl?: string;
  tokenMethod?: "post" | "get" | "post_with_query_string";
  authScheme?: "basic_auth" | "request_body" | "tls_client_auth" | "private_key_jwt";
  connectionOpts?: SpecConnectionOptions;
  raiseErrors?: boolean;
  maxRedirects?: number;
  logger?: Logger;
  redirectUri?: string;
  clientAssertionKey?: CryptoKey | JsonWebKey | string;
  clientAssertionAlg?: string;
  connectionBuild?: (builder: ConnectionBuilder) => void;
}
interface SpecConnectionOptions {
  headers?: Record<string, string>;
  timeout?: number;
  proxy?: string;
  fetch?: typeof fetch;
}
interface SpecConnectionBuilder {
  use(middleware: Middleware): ConnectionBuilder;
  adapter(fetchImpl: typeof fetch): ConnectionBuilder;
}
type SpecMiddleware = (
  request: Request,
  next: (request: Request) => Promise<globalThis.Response>,
) => Promise<globalThis.Response>;
interface SpecLogger {
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}
interface SpecRequestOptions {
  params?: Record<string, string | number | boolean | string[]>;
  headers?: Record<string, string>;
  body?: string | Record<string, unknown> | Uint8Array;
  raiseErrors?: boolean;
  snaky?: boolean;
  parse?: "automatic" | "json" | "query" | "text";
}
type Verb = "get" | "post" | "put" | "patch" | "delete" | "head" | "options";
type Placement = "header" | "query" | "body";
interface SpecAccessTokenOptions {
  refresh_token?: string;
  expires_in?: number | string;
  expires_at?: number | string;
  expires_latency?: number;
  mode?:
    | Placement
    | ((verb: string) => Placement)
    | Partial<Record<string, Placement>>;
  header_format?: string;
  param_name?: string;
  token_name?: string;
  [extra: string]: unknown;
}
interface SpecClient {
  id: string;
  secret: string;
  site?: string;
  options: unknown;
  authorizeUrl(params?: Record<string, string>): string;
  tokenUrl(params?: Record<string, string>): string;
  revokeUrl(params?: Record<string, string>): string;
  request(verb: Verb, url: string, opts?: SpecRequestOptions): Promise<OAuthResponse>;
  getToken(
    params: Record<string, unknown>,
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<AccessToken>;
  revokeToken(
    token: string,
    tokenTypeHint?: "access_token" | "refresh_token",
    params?: Record<string, unknown>,
  ): Promise<OAuthResponse>;
  authCode: {
    authorizeUrl(params?: {
      redirect_uri?: string;
      scope?: string;
      state?: string;
      code_challenge?: string;
      code_challenge_method?: string;
      [k: string]: unknown;
    }): string;
    getToken(
      code: string,
      params?: {
        redirect_uri?: string;
        code_verifier?: string;
        headers?: Record<string, string>;
        [k: string]: unknown;
      },
      accessTokenOpts?: SpecAccessTokenOptions,
    ): Promise<AccessToken>;
  };
  implicit: { authorizeUrl(params?: Record<string, unknown>): string };
  password: {
    getToken(
      username: string,
      password: string,
      params?: Record<string, unknown>,
      accessTokenOpts?: SpecAccessTokenOptions,
    ): Promise<AccessToken>;
  };
  clientCredentials: {
    getToken(
      params?: Record<string, unknown>,
      accessTokenOpts?: SpecAccessTokenOptions,
    ): Promise<AccessToken>;
  };
  assertion: {
    getToken(
      claims: Record<string, unknown>,
      encoding: {
        algorithm: string;
        key: CryptoKey | JsonWebKey | string | Uint8Array;
        kid?: string;
      },
      params?: Record<string, unknown>,
      accessTokenOpts?: SpecAccessTokenOptions,
    ): Promise<AccessToken>;
  };
}
interface SpecAccessToken {
  client: Client;
  token: string;
  refreshToken?: string;
  expiresIn?: number;
  expiresAt?: number;
  expiresLatency?: number;
  params: Record<string, unknown>;
  options: unknown;
  expires(): boolean;
  expired(): boolean;
  refresh(
    params?: Record<string, unknown>,
    accessTokenOpts?: SpecAccessTokenOptions,
  ): Promise<AccessToken>;
  revoke(params?: { token_type_hint?: "access_token" | "refresh_token" }): Promise<OAuthResponse>;
  toHash(): Record<string, unknown>;
  headers(): Record<string, string>;
  request(verb: Verb, path: string, opts?: SpecRequestOptions): Promise<OAuthResponse>;
  get(path: string, opts?: SpecRequestOptions): Promise<OAuthResponse>;
  post(path: string, opts?: SpecRequestOptions): Promise<OAuthResponse>;
  put(path: string, opts?: SpecRequestOptions): Promise<OAuthResponse>;
  patch(path: string, opts?: SpecRequestOptions): Promise<OAuthResponse>;
  delete(path: string, opts?: SpecRequestOptions): Promise<OAuthResponse>;
}
interface SpecResponse {
  status: number;
  headers: Headers;
  body: string;
  contentType: string | null;
  parsed: SnakyHash | Record<string, unknown> | unknown[] | string | null;
  error?: OAuthError;
  response: globalThis.Response;
}
interface SpecError extends Error {
  code?: string;
  description?: string;
  response: OAuthResponse;
}
interface SpecConfig {
  silenceExtraTokensWarning: boolean;
  silenceNoTokensWarning: boolean;
  filteredLabel: string;
  filteredDebugKeys: string[];
}
type ValueHooks = Array<(value: unknown) => unknown>;
type HashHooks = Array<(hash: Record<string, unknown>) => Record<string, unknown>>;

// Every name of the page exists (a missing one fails `deno check` here) ...
keys<HasKeys<ClientOptions, SpecClientOptions>>();
keys<HasKeys<ConnectionOptions, SpecConnectionOptions>>();
keys<HasKeys<RequestOptions, SpecRequestOptions>>();
keys<HasKeys<AccessTokenOptions, SpecAccessTokenOptions>>();
keys<HasKeys<OAuth2Config, SpecConfig>>();

Deno.test("client-api.md: every name exists with the page's shape", async () => {
  // ... and with a shape that code written against the page can use.
  const allOptions: Required<SpecClientOptions> = {
    site: "https://id.example.com/base",
    authorizeUrl: "oauth/authorize",
    tokenUrl: "/oauth/token",
    revokeUrl: "https://id.example.com/revoke",
    tokenMethod: "post",
    authScheme: "basic_auth",
    connectionOpts: { headers: { "x-a": "1" }, timeout: 1000, proxy: undefined, fetch },
    raiseErrors: true,
    maxRedirects: 5,
    logger: console satisfies SpecLogger,
    redirectUri: "https://app.example.com/cb",
    clientAssertionKey: { kty: "EC" } satisfies JsonWebKey,
    clientAssertionAlg: "ES256",
    connectionBuild: (b: ConnectionBuilder) => void b,
  };
  const options: ClientOptions = allOptions;
  const client = new Client("id", "secret", options);
  const specClient: SpecClient = client;
  const builder: SpecConnectionBuilder = {} as ConnectionBuilder;
  const middleware: Middleware = (async (r, next) => await next(r)) satisfies SpecMiddleware;
  const requestOptions: RequestOptions = {} as SpecRequestOptions;
  const tokenOptions: AccessTokenOptions = {} as SpecAccessTokenOptions;
  const token = new AccessToken(client, "t", {
    expires_in: "60",
    mode: (v) => v === "get" ? "query" : "header",
  });
  const specToken: SpecAccessToken = token;
  const fromHash: AccessToken = AccessToken.fromHash(client, { access_token: "a" });
  const fromKv: AccessToken = AccessToken.fromKvform(client, "access_token=a");
  const response: Response = await ResponseValue.from(globalThis.Response.json({ a: 1 }));
  const specResponse: SpecResponse = response;
  const error: SpecError = new OAuthError(response);
  const cfg: Readonly<SpecConfig> = config;
  configure((c: OAuth2Config) => void (c satisfies SpecConfig));
  Serializer.extend(SnakyHash);
  const dump: (hash: SnakyHash) => string = (h) => SnakyHash.dump(h);
  const load: (text: string) => SnakyHash = (t) => SnakyHash.load(t);
  const hooks: [ValueHooks, ValueHooks, HashHooks, HashHooks] = [
    SnakyHash.dumpValueHooks,
    SnakyHash.loadValueHooks,
    SnakyHash.dumpHashHooks,
    SnakyHash.loadHashHooks,
  ];
  const pkce: { codeVerifier: string; codeChallenge: string; codeChallengeMethod: "S256" } =
    await generatePkce();
  void [builder, middleware, requestOptions, tokenOptions, fromHash, fromKv, error, cfg, hooks];

  // Run time: the members are there and behave as the page says.
  for (
    const name of [
      "authorizeUrl",
      "tokenUrl",
      "revokeUrl",
      "request",
      "getToken",
      "revokeToken",
    ] as const
  ) assert.equal(typeof specClient[name], "function", name);
  assert.equal(specClient.id, "id");
  assert.equal(specClient.secret, "secret");
  assert.equal(specClient.site, "https://id.example.com/base");
  // the client's redirectUri is added, as the gem's Client#authorize_url does
  assert.equal(
    specClient.authorizeUrl(),
    "https://id.example.com/base/oauth/authorize?redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb",
  );
  assert.equal(specClient.tokenUrl(), "https://id.example.com/oauth/token");
  assert.equal(specClient.revokeUrl(), "https://id.example.com/revoke");
  for (const s of ["authCode", "implicit", "password", "clientCredentials", "assertion"] as const) {
    assert.equal(typeof specClient[s], "object", s);
  }
  assert.equal(typeof specClient.authCode.getToken, "function");
  assert.equal(typeof specClient.assertion.getToken, "function");
  for (
    const name of [
      "expires",
      "expired",
      "refresh",
      "revoke",
      "toHash",
      "headers",
      "request",
      "get",
      "post",
      "put",
      "patch",
      "delete",
    ] as const
  ) assert.equal(typeof specToken[name], "function", name);
  assert.equal(specToken.expiresIn, 60);
  assert.equal(typeof specToken.expiresAt, "number");
  assert.deepEqual(specToken.headers(), { Authorization: "Bearer t" });
  assert.equal(specResponse.status, 200);
  assert.equal(specResponse.contentType, "application/json");
  assert.ok(specResponse.parsed instanceof SnakyHash);
  assert.equal(specResponse.response instanceof globalThis.Response, true);
  assert.equal(error.response, response);
  assert.equal(load(dump(new SnakyHash({ aB: 1 }))).get("a_b"), 1);
  assert.equal(pkce.codeChallengeMethod, "S256");
  assert.equal(ResponseValue, OAuthResponse);
});

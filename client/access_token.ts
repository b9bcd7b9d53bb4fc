/**
 * `AccessToken`: a token with its expiry, its refresh token, and the means to
 * make requests with it (docs/client.md, "Tokens").
 * @module
 */
import type { Client } from "./client.ts";
import { config, isRecord, mistyped } from "./config.ts";
import { inspectAs } from "./inspect.ts";
import { redact } from "./redact.ts";
import { OAuthResponse } from "./response.ts";
import type { Answer } from "./transport.ts";
import { OAuthError } from "./error.ts";
import type { RequestOptions, TokenParams, Verb } from "./options.ts";
import { snakeCase, SnakyHash } from "./snaky_hash.ts";
import { internalRequest } from "./request.ts";
import { authorizationHeader, placementFor, withToken } from "./token_placement.ts";
import {
  type AccessTokenOptions,
  checkMode,
  isTokenField,
  nowSeconds,
  toEpoch,
  toInteger,
  TOKEN_KEYS,
  type TokenMode,
  type TokenPlacement,
  type TokenTransmission,
} from "./token_options.ts";

export type { AccessTokenOptions, TokenMode, TokenPlacement, TokenTransmission };

/**
 * What `accessTokenFromOwnedHash` tells the constructor it calls next: the
 * field the token was taken from (left out of `params`; not a mark on the
 * hash, whose shape a symbol key would change, a measurable cost on every
 * token response), and for a token response, what `response` is made of
 * (the caller then checks for a missing token itself, with the response).
 */
let handoffKey: string | undefined;
let handoffAnswer: [Answer, TokenParams] | undefined;

/** Whether the inspect hooks are on the prototype (inspect.ts). */
let hooked = false;

/**
 * Builds the token of a token response (a hash the caller gives away); its
 * `response` is made from `answer` when first read.
 */
export function tokenOfResponse(
  client: Client,
  hash: Record<string, unknown>,
  answer: Answer,
  params: TokenParams,
): AccessToken {
  return accessTokenFromOwnedHash(client, hash, [answer, params]);
}

/**
 * An access token bound to a client.
 *
 * @example
 * ```ts ignore
 * import { AccessToken, Client } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const saved = { access_token: "abc", refresh_token: "r1", expires_at: 1900000000 };
 * const token = AccessToken.fromHash(client, saved);
 * const fresh = token.expired() ? await token.refresh() : token;
 * const res = await fresh.get("/v1/me");
 * console.log(res.parsed, fresh.toHash());
 * ```
 */
export class AccessToken {
  /** The client that obtained (and refreshes) this token. */
  readonly client: Client;
  /** The access token string. */
  token: string;
  /** The refresh token, when the provider sent one. */
  refreshToken?: string;
  /** Seconds until expiry as the provider sent them. */
  expiresIn?: number;
  /** Expiry in epoch seconds (already reduced by `expiresLatency`). */
  expiresAt?: number;
  /** The validated claims of the ID token, set by an `idTokenVerifier()` (`@authsvc/oauth2/oidc`). */
  idTokenClaims?: Record<string, unknown>;
  /** Seconds taken off the expiry. */
  readonly expiresLatency?: number;
  /** The other fields of the token response (`token_type`, `scope`, `id_token` ...). */
  readonly params: Record<string, unknown>;
  /** Transmission options. */
  options: TokenTransmission;
  #response?: OAuthResponse;
  /** What `response` is made of, until it is read. */
  #answer?: [Answer, TokenParams];
  #refreshing?: Promise<AccessToken>;

  /**
   * Creates an instance.
   *
   * @param client the client
   * @param token the access token string (may be empty in refresh-only flows)
   * @param opts refresh token, expiry and transmission options; other keys go to `params`
   * @throws {TypeError} when an argument has the wrong type
   */
  constructor(client: Client, token: string, opts: AccessTokenOptions = {}) {
    const skip = handoffKey; // first, so that no throw below leaves them set
    this.#answer = handoffAnswer;
    handoffKey = handoffAnswer = undefined;
    if (typeof client !== "object" || typeof client?.getToken !== "function") {
      throw mistyped("AccessToken", "client", "a Client", client);
    }
    if (typeof token !== "string") throw mistyped("AccessToken", "token", "a string", token);
    if (!isRecord(opts)) throw mistyped("AccessToken", "opts", "an object", opts);
    hooked ||= inspectAs(AccessToken, (t) => t.#redacted());
    this.client = client;
    this.token = token;
    const source: Record<string, unknown> = opts instanceof SnakyHash ? opts.toObject() : opts;
    // The fields the token reads; every other one (but the token's own field) goes to params.
    const params: Record<string, unknown> = {};
    for (const key in source) {
      if (key !== skip && !isTokenField(key)) params[key] = source[key];
    }
    const { refresh_token: refresh, mode, header_format: format, param_name: paramName } = source;
    if (refresh !== undefined && refresh !== null && refresh !== "") {
      this.refreshToken = String(refresh);
    }
    if (!this.#answer && !token && !this.refreshToken) {
      // As the gem: no token and no refresh token is an error when the client raises errors.
      if (client.options.raiseErrors) {
        throw new OAuthError({
          error: "no_token",
          error_description: `AccessToken has no token; options are: ${
            Object.keys(source).join(", ") || "(none)"
          }`,
        });
      }
      if (!config.silenceNoTokensWarning) client.logger.warn("AccessToken has no token");
    }
    this.expiresIn = toInteger(source.expires_in ?? source.expires);
    this.expiresLatency = toInteger(source.expires_latency);
    let at = toEpoch(source.expires_at);
    if (at === undefined && this.expiresIn) {
      // From the time the token request was sent: the token was issued after it.
      const sent = this.#answer?.[0].sent;
      at = (sent === undefined ? nowSeconds() : Math.floor(sent / 1000)) + this.expiresIn;
    }
    if (at !== undefined && this.expiresLatency) at -= this.expiresLatency;
    this.expiresAt = at;
    if (format !== undefined && typeof format !== "string") {
      throw mistyped("AccessToken", "header_format", "a string", format);
    }
    if (paramName !== undefined && typeof paramName !== "string") {
      throw mistyped("AccessToken", "param_name", "a string", paramName);
    }
    this.options = {
      mode: mode === undefined || mode === null ? "header" : checkMode(mode),
      header_format: format ?? "Bearer %s",
      param_name: paramName ?? "access_token",
    };
    if (source.token_name !== undefined) this.options.token_name = String(source.token_name);
    this.params = params;
  }

  /** The token response, when this token came from one. */
  get response(): OAuthResponse | undefined {
    const made = this.#answer;
    if (made) {
      this.#answer = undefined;
      const [{ response, text }, { parse, snaky, snakyHashClass }] = made;
      this.#response = new OAuthResponse(response, text, { parse, snaky, snakyHashClass });
    }
    return this.#response;
  }
  set response(value: OAuthResponse | undefined) {
    this.#answer = undefined;
    this.#response = value;
  }

  /**
   * Builds a token from a token response hash; the token is `access_token`,
   * else `id_token`, `token`, `accessToken`, `idToken`, or the field named by
   * `token_name`. Other fields become options and `params`.
   */
  static fromHash(client: Client, hash: Record<string, unknown>): AccessToken {
    if (!isRecord(hash)) throw mistyped("fromHash", "hash", "an object", hash);
    return accessTokenFromOwnedHash(
      client,
      hash instanceof SnakyHash ? hash.toObject() : { ...hash },
    );
  }

  /** Builds a token from a form-encoded string (an implicit-grant callback fragment). */
  static fromKvform(client: Client, kvform: string): AccessToken {
    if (typeof kvform !== "string") throw mistyped("fromKvform", "kvform", "a string", kvform);
    return accessTokenFromOwnedHash(
      client,
      Object.fromEntries(new URLSearchParams(kvform.replace(/^[#?]/, ""))),
    );
  }

  /** Whether the token has an expiry. */
  expires(): boolean {
    return this.expiresAt !== undefined;
  }

  /** Whether the expiry (less `expiresLatency`) has passed. */
  expired(): boolean {
    return this.expiresAt !== undefined && this.expiresAt <= nowSeconds();
  }

  /**
   * Gets a new token with the refresh token. Concurrent calls share one
   * request. The refresh token is carried over when the response has none;
   * transmission options are carried over unless given.
   *
   * @throws {Error} when there is no refresh token
   * @throws {OAuthError} when the provider refuses
   */
  refresh(
    params: TokenParams = {},
    accessTokenOpts: AccessTokenOptions = {},
  ): Promise<AccessToken> {
    if (!this.refreshToken) {
      return Promise.reject(new Error("A refresh_token is not available"));
    }
    if (this.#refreshing) return this.#refreshing;
    const refreshToken = this.refreshToken;
    const defaults: AccessTokenOptions = { ...this.options };
    if (this.expiresLatency !== undefined) defaults.expires_latency = this.expiresLatency;
    this.#refreshing = this.client.getToken(
      { ...params, grant_type: "refresh_token", refresh_token: refreshToken },
      { ...defaults, ...accessTokenOpts },
    ).then((fresh) => {
      if (!fresh.refreshToken) fresh.refreshToken = refreshToken;
      return fresh;
    }).finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /**
   * Revokes the token (RFC 7009): the access token by default, or the one
   * named by `token_type_hint`.
   *
   * @throws {TypeError} for an unknown `token_type_hint`
   * @throws {Error} when that token is not available
   */
  revoke(
    params: { token_type_hint?: "access_token" | "refresh_token"; [k: string]: unknown } = {},
  ): Promise<OAuthResponse> {
    const { token_type_hint, ...rest } = params;
    let hint: "access_token" | "refresh_token";
    if (token_type_hint === "access_token" || token_type_hint === "refresh_token") {
      hint = token_type_hint;
    } else if (token_type_hint === undefined || token_type_hint === null) {
      hint = this.token ? "access_token" : "refresh_token";
    } else {
      return Promise.reject(
        new TypeError(`"token_type_hint" must be "access_token" or "refresh_token"`),
      );
    }
    const value = hint === "access_token" ? this.token : this.refreshToken;
    if (!value) return Promise.reject(new Error(`${hint} is not available for revoking`));
    return this.client.revokeToken(value, hint, rest);
  }

  /** A hash that `AccessToken.fromHash` turns back into an equal token. */
  toHash(): Record<string, unknown> {
    const hash: Record<string, unknown> = {
      ...this.params,
      access_token: this.token,
      refresh_token: this.refreshToken,
      expires_at: this.expiresAt,
      mode: this.options.mode,
      header_format: this.options.header_format,
      param_name: this.options.param_name,
    };
    if (this.options.token_name !== undefined) hash.token_name = this.options.token_name;
    return hash;
  }

  /** The Authorization header this token sends in header mode. */
  headers(): Record<string, string> {
    return authorizationHeader(this.token, this.options);
  }

  /** Where the token goes for `verb`. */
  placement(verb: string): TokenPlacement {
    const placement = placementFor(this.options.mode, verb);
    if (placement !== "header" && this.client.options.profile === "fapi2") {
      throw new TypeError(
        `FAPI 2.0 sends tokens only in the Authorization header, not the ${placement}`,
      );
    }
    return placement;
  }

  /**
   * Makes a request with the token (relative paths resolve against the
   * client's site). With the client's `autoRefresh`, an expired token with a
   * refresh token is first refreshed in place (see {@linkcode AccessToken.renew}).
   */
  request(verb: Verb, path: string, opts: RequestOptions = {}): Promise<OAuthResponse> {
    if (this.client.options.autoRefresh && this.refreshToken && this.expired()) {
      return this.renew().then(() => this.#send(verb, path, opts));
    }
    return this.#send(verb, path, opts);
  }

  #renewing?: Promise<this>;

  /**
   * Refreshes this token in place: one refresh request however many callers
   * wait on it; then `token`, `refreshToken`, the expiry, `params`,
   * `response` and `idTokenClaims` are the new ones and the client's
   * `onRefresh` is called once with this token.
   *
   * @throws {OAuthError} when the provider refuses the refresh token
   */
  renew(): Promise<this> {
    return this.#renewing ??= this.refresh().then(async (fresh) => {
      this.token = fresh.token;
      this.refreshToken = fresh.refreshToken;
      this.expiresIn = fresh.expiresIn;
      this.expiresAt = fresh.expiresAt;
      for (const k of Object.keys(this.params)) delete this.params[k];
      Object.assign(this.params, fresh.params);
      this.response = fresh.response;
      this.idTokenClaims = fresh.idTokenClaims;
      await this.client.options.onRefresh?.(this);
      return this;
    }).finally(() => {
      this.#renewing = undefined;
    });
  }

  #send(verb: Verb, path: string, opts: RequestOptions): Promise<OAuthResponse> {
    const placement = this.placement(verb);
    return internalRequest(
      this.client,
      verb,
      path,
      withToken(this.token, this.options, placement, verb, opts),
      [this.token, this.refreshToken],
      placement === "body",
    );
  }

  /** GET with the token. */
  get(path: string, opts?: RequestOptions): Promise<OAuthResponse> {
    return this.request("get", path, opts);
  }
  /** POST with the token. */
  post(path: string, opts?: RequestOptions): Promise<OAuthResponse> {
    return this.request("post", path, opts);
  }
  /** PUT with the token. */
  put(path: string, opts?: RequestOptions): Promise<OAuthResponse> {
    return this.request("put", path, opts);
  }
  /** PATCH with the token. */
  patch(path: string, opts?: RequestOptions): Promise<OAuthResponse> {
    return this.request("patch", path, opts);
  }
  /** DELETE with the token. */
  delete(path: string, opts?: RequestOptions): Promise<OAuthResponse> {
    return this.request("delete", path, opts);
  }

  /** What the inspect hooks show: the tokens as the filtered label (`Deno.inspect`, `console.log`). */
  #redacted(): Record<string, unknown> {
    const label = config.filteredLabel;
    return {
      token: this.token ? label : "",
      refreshToken: this.refreshToken ? label : undefined,
      expiresAt: this.expiresAt,
      expiresIn: this.expiresIn,
      options: this.options,
      params: redact(this.params, [this.token, this.refreshToken]),
    };
  }

  /** The class name, shown by the inspect hooks (it survives minification). */
  get [Symbol.toStringTag](): string {
    return "AccessToken";
  }
}

/** `AccessToken.fromHash` on a plain hash the caller gives away (no defensive copy). */
export function accessTokenFromOwnedHash(
  client: Client,
  fresh: Record<string, unknown>,
  answer?: [Answer, TokenParams],
): AccessToken {
  let key: string | undefined;
  if (fresh.token_name !== undefined && fresh.token_name !== null) {
    const name = String(fresh.token_name);
    key = name in fresh ? name : snakeCase(name) in fresh ? snakeCase(name) : undefined;
    if (key === undefined && !config.silenceNoTokensWarning) {
      client.logger.warn(
        `AccessToken.fromHash: token_name "${name}" is not among the keys ` +
          `(${Object.keys(fresh).join(", ")}); you may need snaky: false`,
      );
    }
  } else {
    let present: string[] | undefined;
    for (const k of TOKEN_KEYS) {
      if (fresh[k] === undefined || fresh[k] === null) continue;
      if (key !== undefined) (present ??= [key]).push(k);
      else if ((key = k) && config.silenceExtraTokensWarning) break; // no need to look further
    }
    if (present && !config.silenceExtraTokensWarning) {
      client.logger.warn(
        `AccessToken.fromHash: the hash holds more than one token field (${present.join(", ")}); ` +
          `using "${key}"`,
      );
    }
    if (key === undefined && !config.silenceNoTokensWarning) {
      client.logger.warn("AccessToken.fromHash: the hash holds no token field");
    }
  }
  const token = key === undefined ? "" : fresh[key];
  // The constructor copies every other field into params; it skips the token's.
  handoffKey = key;
  handoffAnswer = answer;
  return new AccessToken(
    client,
    token === undefined || token === null ? "" : String(token),
    fresh,
  );
}

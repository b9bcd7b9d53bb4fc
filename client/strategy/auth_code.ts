/** The authorization code grant (RFC 6749 §4.1) with PKCE (RFC 7636). @module */
import type { AccessToken, AccessTokenOptions } from "../access_token.ts";
import type { Client } from "../client.ts";
import { typeName } from "../config.ts";
import type { TokenParams } from "../options.ts";

/**
 * Query parameters of the authorize URL.
 *
 * @example
 * ```ts
 * import { type AuthorizeParams, Client } from "@authsvc/oauth2";
 * const client = new Client("app", "secret", { site: "https://id.example.com" });
 * const params: AuthorizeParams = { redirect_uri: "https://app.example.com/cb", scope: "openid email", state: crypto.randomUUID(), prompt: "consent" };
 * console.log(client.authCode.authorizeUrl(params));
 * ```
 */
export interface AuthorizeParams {
  /** Where the provider sends the user back; default the client's `redirectUri`. */
  redirect_uri?: string;
  /** Requested scope. */
  scope?: string;
  /** Opaque value checked on the callback (CSRF protection). */
  state?: string;
  /** PKCE challenge (see `generatePkce`). */
  code_challenge?: string;
  /** `"S256"` with `generatePkce`. */
  code_challenge_method?: string;
  /** Any other parameter (`nonce`, `prompt`, `resource` ...). */
  [k: string]: unknown;
}

/**
 * Parameters of the code exchange.
 *
 * @example
 * ```ts
 * import { type AuthCodeTokenParams, Client } from "@authsvc/oauth2";
 * const client = new Client("app", "secret", { site: "https://id.example.com" });
 * const params: AuthCodeTokenParams = { redirect_uri: "https://app.example.com/cb", code_verifier: "the-verifier-from-generatePkce" };
 * const exchange = (code: string) => client.authCode.getToken(code, params);
 * console.log(typeof exchange);
 * ```
 */
export interface AuthCodeTokenParams extends TokenParams {
  /** Must equal the one on the authorize URL; default the client's `redirectUri`. */
  redirect_uri?: string;
  /** The PKCE verifier whose challenge was on the authorize URL. */
  code_verifier?: string;
}

/** Checks that `params` is a plain object (or absent); returns a copy. */
export function objectParam<T extends object>(
  params: T | undefined,
  name: string,
  where: string,
): T {
  if (params === undefined || params === null) return {} as T;
  if (typeof params !== "object" || Array.isArray(params)) {
    throw new TypeError(`${where}: "${name}" must be an object, got ${typeName(params)}`);
  }
  return { ...params };
}

/** The authorize URL of the code and implicit grants (gem: `authorize_params.merge(params)`). */
export function strategyAuthorizeUrl(
  client: Client,
  responseType: string,
  params: AuthorizeParams | undefined,
  where: string,
): string {
  const p = objectParam(params, "params", where);
  if (client.options.profile === "fapi2") {
    throw new TypeError(
      `${where}: FAPI 2.0 sends authorization requests only by PAR (pushAuthorizationRequest)`,
    );
  }
  if ("client_secret" in p) {
    throw new TypeError(`${where}: client_secret is not allowed in authorize URL query params`);
  }
  return client.authorizeUrl({ response_type: responseType, client_id: client.id, ...p });
}

/**
 * Builds authorization URLs and exchanges codes for tokens.
 *
 * @example
 * ```ts ignore
 * import { Client, generatePkce } from "@authsvc/oauth2";
 * const client = new Client("app", "secret", { site: "https://id.example.com", redirectUri: "https://app.example.com/cb" });
 * const pkce = await generatePkce();
 * const url = client.authCode.authorizeUrl({ scope: "openid", state: "xyz", code_challenge: pkce.codeChallenge, code_challenge_method: "S256" });
 * // after the redirect back with ?code=...&state=xyz
 * const token = await client.authCode.getToken("the-code", { code_verifier: pkce.codeVerifier });
 * console.log(url, token.token);
 * ```
 */
export class AuthCode {
  #client: Client;

  /**
   * Binds the strategy to a client (use the client's getter instead).
   *
   * @param client the client
   */
  constructor(client: Client) {
    this.#client = client;
  }

  /**
   * The authorize URL with `client_id`, `response_type=code`, the client's
   * `redirectUri` and `params` (which win, as in the gem).
   *
   * @throws {TypeError} when `params` hold `client_secret` (never in a URL)
   */
  authorizeUrl(params?: AuthorizeParams): string {
    return strategyAuthorizeUrl(this.#client, "code", params, "authCode.authorizeUrl");
  }

  /**
   * Exchanges `code` for a token.
   *
   * @throws {TypeError} when `code` is not a non-empty string
   * @throws {OAuthError} when the provider refuses the code
   */
  getToken(
    code: string,
    params?: AuthCodeTokenParams,
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<AccessToken> {
    if (typeof code !== "string" || code === "") {
      return Promise.reject(
        new TypeError(
          `authCode.getToken: "code" must be a non-empty string, got ${typeName(code)}`,
        ),
      );
    }
    const p = objectParam(params, "params", "authCode.getToken");
    const redirect_uri = p.redirect_uri ?? this.#client.options.redirectUri;
    return this.#client.getToken(
      { ...p, ...(redirect_uri ? { redirect_uri } : {}), grant_type: "authorization_code", code },
      accessTokenOpts,
    );
  }
}

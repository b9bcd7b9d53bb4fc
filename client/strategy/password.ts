/** The resource owner password credentials grant (RFC 6749 §4.3; omitted from OAuth 2.1). @module */
import type { AccessToken, AccessTokenOptions } from "../access_token.ts";
import type { Client } from "../client.ts";
import { mistyped } from "../config.ts";
import type { TokenParams } from "../options.ts";
import { objectParam } from "./auth_code.ts";

const WHERE = "password.getToken";

/**
 * Exchanges a username and password for a token.
 *
 * @example
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 * const client = new Client("cli", "secret", { site: "https://id.example.com" });
 * const token = await client.password.getToken("ann", "her password", { scope: "read" });
 * console.log(token.expiresAt);
 * ```
 */
export class Password {
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
   * Not available: this grant has no authorization endpoint step (the gem
   * raises `NotImplementedError`).
   *
   * @throws {Error} always
   */
  authorizeUrl(): never {
    throw new Error("password.authorizeUrl: this grant has no authorization URL");
  }

  /**
   * Requests a token with `grant_type=password`.
   *
   * @throws {TypeError} when `username` or `password` is not a string
   * @throws {OAuthError} when the provider refuses
   */
  getToken(
    username: string,
    password: string,
    params?: TokenParams,
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<AccessToken> {
    try {
      if (typeof username !== "string") throw mistyped(WHERE, "username", "a string", username);
      if (typeof password !== "string") throw mistyped(WHERE, "password", "a string", password);
      const p = objectParam(params, WHERE);
      return this.#client.getToken(
        { ...p, grant_type: "password", username, password },
        accessTokenOpts,
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

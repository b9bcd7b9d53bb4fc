/** The implicit grant (RFC 6749 §4.2; omitted from OAuth 2.1, kept for old providers). @module */
import type { Client } from "../client.ts";
import { type AuthorizeParams, strategyAuthorizeUrl } from "./auth_code.ts";

/**
 * Builds implicit-grant authorization URLs. The token arrives in the callback
 * fragment: read it with `AccessToken.fromKvform(client, location.hash)`.
 *
 * @example
 * ```ts
 * import { AccessToken, Client } from "@authsvc/oauth2";
 * const client = new Client("spa", "", { site: "https://id.example.com", redirectUri: "https://app.example.com/cb" });
 * const url = client.implicit.authorizeUrl({ scope: "read" }); // response_type=token
 * // on the callback page: https://app.example.com/cb#access_token=...&expires_in=3600
 * const token = AccessToken.fromKvform(client, "#access_token=abc&token_type=bearer&expires_in=3600");
 * console.log(url, token.expiresIn);
 * ```
 */
export class Implicit {
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
   * The authorize URL with `client_id`, `response_type=token`, the client's
   * `redirectUri` and `params` (which win, as in the gem).
   *
   * @throws {TypeError} when `params` hold `client_secret` (never in a URL)
   */
  authorizeUrl(params?: AuthorizeParams): string {
    return strategyAuthorizeUrl(this.#client, "token", params, "implicit.authorizeUrl");
  }

  /**
   * Not available: the implicit grant has no token request.
   *
   * @throws {Error} always
   */
  getToken(): never {
    throw new Error(
      "The implicit grant has no token request; read the callback with AccessToken.fromKvform",
    );
  }
}

/** The client credentials grant (RFC 6749 §4.4). @module */
import type { AccessToken, AccessTokenOptions } from "../access_token.ts";
import type { Client } from "../client.ts";
import type { TokenParams } from "../options.ts";
import { objectParam } from "./auth_code.ts";

/**
 * Requests a token for the client itself.
 *
 * @example
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 * const client = new Client("service", "secret", { site: "https://id.example.com" });
 * const token = await client.clientCredentials.getToken({ scope: "api:read", resource: "https://api.example.com" });
 * const res = await token.get("https://api.example.com/v1/things");
 * console.log(res.parsed);
 * ```
 */
export class ClientCredentials {
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
    throw new Error("clientCredentials.authorizeUrl: this grant has no authorization URL");
  }

  /**
   * Requests a token with `grant_type=client_credentials`.
   *
   * @throws {OAuthError} when the provider refuses
   */
  getToken(params?: TokenParams, accessTokenOpts?: AccessTokenOptions): Promise<AccessToken> {
    try {
      const p = objectParam(params, "clientCredentials.getToken");
      return this.#client.getToken({ ...p, grant_type: "client_credentials" }, accessTokenOpts);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

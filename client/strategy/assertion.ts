/** The JWT bearer assertion grant (RFC 7523 §2.1), signed with WebCrypto. @module */
import type { AccessToken, AccessTokenOptions } from "../access_token.ts";
import type { Client } from "../client.ts";
import { isRecord, mistyped } from "../config.ts";
import type { SigningKeyInput } from "../signing_keys.ts";
import type { TokenParams } from "../options.ts";
import { objectParam } from "./auth_code.ts";

/**
 * The `grant_type` of RFC 7523 §2.1.
 *
 * @example
 * ```ts
 * import { JWT_BEARER_GRANT } from "@authsvc/oauth2";
 * console.log(JWT_BEARER_GRANT); // "urn:ietf:params:oauth:grant-type:jwt-bearer"
 * ```
 */
export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/**
 * How the assertion is signed.
 *
 * @example
 * ```ts
 * import { type AssertionEncoding } from "@authsvc/oauth2";
 * const encoding: AssertionEncoding = { algorithm: "RS256", key: "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----", kid: "key-1" };
 * console.log(encoding.algorithm);
 * ```
 */
export interface AssertionEncoding {
  /** HS256/384/512, RS256/384/512, PS256/384/512, ES256/384 or EdDSA. */
  algorithm: string;
  /** CryptoKey, JWK, PKCS#8 PEM, or for HS* a secret string or bytes. */
  key: SigningKeyInput;
  /** Key id for the JWS header. */
  kid?: string;
}

/**
 * Signs a claim set and exchanges it for a token.
 *
 * @example
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 * const client = new Client("svc", "", { site: "https://oauth2.example.com", authScheme: "request_body" });
 * const now = Math.floor(Date.now() / 1000);
 * const token = await client.assertion.getToken(
 *   { iss: "svc@example.iam", sub: "svc@example.iam", aud: "https://oauth2.example.com/token", iat: now, exp: now + 300, scope: "read" },
 *   { algorithm: "RS256", key: "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----" },
 * );
 * console.log(token.token);
 * ```
 */
export class Assertion {
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
    throw new Error("assertion.authorizeUrl: this grant has no authorization URL");
  }

  /**
   * Signs `claims` (iss, aud, sub, exp as epoch seconds ...) and requests a
   * token with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`.
   *
   * @throws {TypeError} for missing claims, an unsupported algorithm or a bad key
   * @throws {OAuthError} when the provider refuses
   */
  async getToken(
    claims: Record<string, unknown>,
    encoding: AssertionEncoding,
    params?: TokenParams,
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<AccessToken> {
    const where = "assertion.getToken";
    if (!isRecord(claims)) throw mistyped(where, "claims", "an object", claims);
    if (claims.exp !== undefined && !Number.isInteger(claims.exp)) {
      throw mistyped(where, "claims.exp", "integer epoch seconds", claims.exp);
    }
    if (!encoding || typeof encoding !== "object") {
      throw mistyped(where, "encoding", "{ algorithm, key }", encoding);
    }
    if (typeof encoding.algorithm !== "string") {
      throw mistyped(where, "encoding.algorithm", "a string", encoding.algorithm);
    }
    if (encoding.key === undefined || encoding.key === null) {
      throw mistyped(where, "encoding.key", "a key", encoding.key);
    }
    const p = objectParam(params, where);
    const { importSigningKey, signJwt } = await import("../jwt.ts");
    const key = await importSigningKey(encoding.key, encoding.algorithm);
    const assertion = await signJwt(
      claims,
      key,
      encoding.algorithm,
      encoding.kid ? { kid: encoding.kid } : {},
    );
    return await this.#client.getToken(
      { ...p, grant_type: JWT_BEARER_GRANT, assertion },
      accessTokenOpts,
    );
  }
}

/** PKCE (RFC 7636) verifier and S256 challenge. @module */
import { base64url, utf8 } from "./encoding.ts";

/**
 * A PKCE pair: send the challenge on the authorize URL, the verifier with the code.
 *
 * @example
 * ```ts ignore
 * import { generatePkce, type Pkce } from "@authsvc/oauth2";
 * const pkce: Pkce = await generatePkce();
 * sessionStorage.setItem("pkce_verifier", pkce.codeVerifier);
 * ```
 */
export interface Pkce {
  /** 43 characters of base64url randomness (32 bytes). */
  codeVerifier: string;
  /** base64url(SHA-256(codeVerifier)). */
  codeChallenge: string;
  /** Always `"S256"`. */
  codeChallengeMethod: "S256";
}

/**
 * Generates a PKCE verifier and its S256 challenge with WebCrypto.
 *
 * @example
 * ```ts
 * import { Client, generatePkce } from "@authsvc/oauth2";
 * const client = new Client("spa", "", { site: "https://id.example.com", redirectUri: "https://app.example.com/cb" });
 * const { codeVerifier, codeChallenge, codeChallengeMethod } = await generatePkce();
 * const url = client.authCode.authorizeUrl({ scope: "openid", code_challenge: codeChallenge, code_challenge_method: codeChallengeMethod });
 * // ...redirect the user to url; on the callback:
 * const exchange = (code: string) => client.authCode.getToken(code, { code_verifier: codeVerifier });
 * console.log(url, typeof exchange);
 * ```
 */
export async function generatePkce(): Promise<Pkce> {
  const codeVerifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest("SHA-256", utf8(codeVerifier));
  return {
    codeVerifier,
    codeChallenge: base64url(new Uint8Array(digest)),
    codeChallengeMethod: "S256",
  };
}

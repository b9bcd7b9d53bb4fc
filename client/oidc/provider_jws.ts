/**
 * A JWS the provider signed for this client (an ID token, a JARM response):
 * its `alg` among the accepted ones (under the FAPI 2.0 profile only PS256,
 * ES256 and EdDSA), the key from the provider's JWKS (`jwksUri`) or, for
 * HS*, the client secret, and the signature.
 * @module
 */
import type { Client } from "../client.ts";
import {
  ASYMMETRIC_ALGORITHMS,
  checkAlg,
  decodeJws,
  FAPI_ALGORITHMS,
  hmacKey,
  keyFromJwks,
  verifySignature,
} from "./jws.ts";

const HMAC_ALGORITHMS = ["HS256", "HS384", "HS512"];

/** The algorithms accepted from the provider when the caller names none. */
export function defaultAlgorithms(client: Client): readonly string[] {
  return client.options.profile === "fapi2"
    ? FAPI_ALGORITHMS
    : [...ASYMMETRIC_ALGORITHMS, ...HMAC_ALGORITHMS];
}

/** Loads the provider's JWKS through the client (its transport, timeout and TLS settings). */
export async function loadThroughClient(client: Client, url: string): Promise<unknown> {
  const res = await client.request("get", url, { headers: { accept: "application/json" } });
  return res.parsedHash;
}

/**
 * Verifies `jws` as signed by the client's provider and returns its parts.
 *
 * @param fail turns a reason into the error to throw
 */
export async function verifyProviderJws(
  client: Client,
  jws: string,
  what: string,
  algorithms: readonly string[] | undefined,
  fail: (reason: string) => Error,
): Promise<{ header: Record<string, unknown>; claims: Record<string, unknown>; alg: string }> {
  let alg: string;
  let key: CryptoKey;
  const decoded = (() => {
    try {
      return decodeJws(jws, what);
    } catch (e) {
      throw fail((e as Error).message);
    }
  })();
  try {
    alg = checkAlg(decoded, algorithms ?? defaultAlgorithms(client), what);
    const kid = typeof decoded.header.kid === "string" ? decoded.header.kid : undefined;
    if (alg.startsWith("HS")) {
      key = await hmacKey(client.secret, alg);
    } else {
      const url = client.options.jwksUri;
      if (!url) throw new Error(`no "jwksUri" to verify an ${alg} ${what}`);
      key = await keyFromJwks(url, (u) => loadThroughClient(client, u), alg, kid);
    }
  } catch (e) {
    throw fail((e as Error).message);
  }
  if (!await verifySignature(decoded, alg, key)) {
    throw fail(`the ${what}'s signature does not verify`);
  }
  return { header: decoded.header, claims: decoded.claims, alg };
}

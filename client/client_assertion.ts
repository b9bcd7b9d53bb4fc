/**
 * The client's own signatures: the `private_key_jwt` client assertion
 * (RFC 7523 §2.2) and the key and algorithm that JAR request objects use
 * too. Loaded only by a client that signs.
 * @module
 */
import type { BaseClient as Client } from "./base_client.ts";
import { importSigningKey, randomJti, signJwt } from "./jwt.ts";

/** Seconds a client assertion is valid. */
const ASSERTION_LIFETIME = 60;

/** The algorithms the FAPI 2.0 Security Profile allows (§5.4). */
const FAPI_ALGS = new Set(["PS256", "ES256", "EdDSA"]);

const assertionKeys = new WeakMap<Client, Promise<CryptoKey>>();

/** The signing algorithm of `private_key_jwt` (and JAR), checked against the client's profile. */
export function clientSigningAlg(client: Client): string {
  const { clientAssertionKey: key, clientAssertionAlg, profile } = client.options;
  const alg = clientAssertionAlg ||
    (key && typeof key === "object" && "alg" in key && typeof key.alg === "string"
      ? key.alg
      : key && typeof key === "object" && "kty" in key && key.kty === "EC"
      ? key.crv === "P-384" ? "ES384" : "ES256"
      : key && typeof key === "object" && "kty" in key && key.kty === "OKP"
      ? "EdDSA"
      : "RS256");
  if (profile === "fapi2" && !FAPI_ALGS.has(alg)) {
    throw new TypeError(`FAPI 2.0 allows PS256, ES256 or EdDSA signatures, not "${alg}"`);
  }
  return alg;
}

/** The client's signing key for `alg` (imported once per client). */
export function clientSigningKey(client: Client, alg: string): Promise<CryptoKey> {
  const raw = client.options.clientAssertionKey;
  if (!raw) throw new TypeError(`"clientAssertionKey" is required to sign for the client`);
  let key = assertionKeys.get(client);
  if (!key) {
    key = importSigningKey(raw, alg);
    assertionKeys.set(client, key);
    key.catch(() => assertionKeys.delete(client));
  }
  return key;
}

/** The JWS header of the client's signatures: `kid` of a JWK key. */
export function clientKeyHeader(client: Client): Record<string, unknown> {
  const raw = client.options.clientAssertionKey;
  return typeof raw === "object" && "kid" in raw && typeof raw.kid === "string"
    ? { kid: raw.kid }
    : {};
}

/**
 * Signs the `private_key_jwt` client assertion (RFC 7523 §2.2). Its `aud` is
 * the issuer when the client knows it (the FAPI 2.0 and RFC 7523bis answer to
 * audience injection), else `endpoint`.
 */
export async function clientAssertion(client: Client, endpoint: string): Promise<string> {
  const alg = clientSigningAlg(client);
  const key = await clientSigningKey(client, alg);
  const now = Math.floor(Date.now() / 1000);
  return await signJwt(
    {
      iss: client.id,
      sub: client.id,
      aud: client.options.issuer ?? endpoint,
      jti: randomJti(),
      iat: now,
      exp: now + ASSERTION_LIFETIME,
    },
    key,
    alg,
    clientKeyHeader(client),
  );
}

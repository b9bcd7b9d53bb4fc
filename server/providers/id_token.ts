/**
 * ID-token verification (OpenID Connect Core 3.1.3.7) with jose: signature
 * against the provider's published keys (JWKS), `iss`, `aud` (our client id),
 * `exp`/`iat` against the server's clock, the `nonce` this server put in the
 * state, and `at_hash` when present. Key sets are fetched once per URL and
 * cached by jose, refetched when an unknown `kid` appears, at most once per
 * cooldown (EXTERNAL_JWKS_COOLDOWN): after a rotation the new key is accepted
 * and, once the set is refetched, the keys it no longer lists are refused.
 */
import { jose } from "../../deps.ts";
import { base64url } from "../util/crypto.ts";
import { type IdTokenRules, ProviderError } from "./types.ts";

/** jose's default: an unknown kid refetches the set at most every 30 s. */
const DEFAULT_COOLDOWN_SEC = 30;

/** The cached key sets, by URL and cooldown (servers of one process may differ in it). */
const keySets = new Map<string, ReturnType<typeof jose.createRemoteJWKSet>>();

function keySet(uri: string, cooldownSec: number): ReturnType<typeof jose.createRemoteJWKSet> {
  const key = `${cooldownSec} ${uri}`;
  let ks = keySets.get(key);
  if (!ks) {
    ks = jose.createRemoteJWKSet(new URL(uri), {
      timeoutDuration: 10_000,
      cooldownDuration: cooldownSec * 1000,
    });
    keySets.set(key, ks);
  }
  return ks;
}

/** What an ID token must match. */
export interface IdTokenExpectations {
  rules: IdTokenRules;
  /** Our client id (or the list of them, any one accepted). */
  audience: string | string[];
  /** The nonce sent on the authorization request. */
  nonce: string;
  /** The access token of the same response, for `at_hash`. */
  accessToken?: string;
  now: Date;
  /** Least seconds between two key-set fetches for an unknown kid (default 30). */
  jwksCooldownSec?: number;
}

const ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
];

/**
 * Verifies `idToken` and returns its claims.
 *
 * @throws {ProviderError} naming what did not match
 */
export async function verifyIdToken(
  idToken: string,
  want: IdTokenExpectations,
): Promise<Record<string, unknown>> {
  let payload: jose.JWTPayload;
  let alg: string;
  try {
    const fixedIssuer = typeof want.rules.issuer === "string" ? want.rules.issuer : undefined;
    const keys = keySet(want.rules.jwksUri, want.jwksCooldownSec ?? DEFAULT_COOLDOWN_SEC);
    const out = await jose.jwtVerify(idToken, keys, {
      audience: want.audience,
      issuer: fixedIssuer,
      currentDate: want.now,
      clockTolerance: 60,
      algorithms: ALGORITHMS,
      requiredClaims: ["iss", "sub", "aud", "exp", "iat"],
    });
    payload = out.payload;
    alg = out.protectedHeader.alg;
  } catch (e) {
    throw new ProviderError(`ID token rejected: ${describe(e)}`, { cause: e });
  }
  if (typeof want.rules.issuer === "function" && !want.rules.issuer(String(payload.iss), payload)) {
    throw new ProviderError(`ID token rejected: unexpected issuer "${payload.iss}"`);
  }
  if (want.rules.nonce !== false && payload.nonce !== want.nonce) {
    throw new ProviderError("ID token rejected: nonce does not match the authorization request");
  }
  if (
    Array.isArray(payload.aud) && payload.aud.length > 1 &&
    ![want.audience].flat().includes(String(payload.azp))
  ) {
    throw new ProviderError("ID token rejected: azp is not this client");
  }
  if (typeof payload.at_hash === "string" && want.accessToken) {
    if (payload.at_hash !== await halfHash(want.accessToken, alg)) {
      throw new ProviderError("ID token rejected: at_hash does not match the access token");
    }
  }
  return payload as Record<string, unknown>;
}

/** base64url of the left half of the hash of `token` (the hash of the signing alg). */
async function halfHash(token: string, alg: string): Promise<string> {
  const bits = alg === "EdDSA" ? "512" : alg.slice(-3);
  const hash = bits === "384" ? "SHA-384" : bits === "512" ? "SHA-512" : "SHA-256";
  const d = new Uint8Array(await crypto.subtle.digest(hash, new TextEncoder().encode(token)));
  return base64url(d.slice(0, d.length / 2));
}

function describe(e: unknown): string {
  if (e instanceof jose.errors.JWTExpired) return "expired";
  if (e instanceof jose.errors.JWTClaimValidationFailed) return `${e.claim} claim invalid`;
  if (e instanceof jose.errors.JWSSignatureVerificationFailed) return "bad signature";
  if (e instanceof jose.errors.JWKSNoMatchingKey) {
    return "no matching key in the provider's key set";
  }
  return e instanceof Error ? e.message.slice(0, 200) : String(e);
}

/**
 * Access-token signing and verification.
 *
 * - HS256 with JWT_SECRET, imported once as a CryptoKey (jose would re-import
 *   a raw secret on every call) for verification; the tokens this server signs
 *   with it are made synchronously (`signHs256`), the bytes jose would make, at
 *   half its cost: every token set pays it (docs/architecture.md, "Performance
 *   shortcuts").
 * - Asymmetric keys (RS256, ES256, EdDSA) from AUTHSVC_JWT_KEYS: the key whose
 *   key_ops contains "sign" signs and its `kid` goes in the header; every key
 *   verifies, so tokens signed before a rotation keep verifying.
 * - The verifying key is chosen by the header (kid, else HS256 secret) and the
 *   algorithm is pinned to that key's, so `alg: none`, an unknown kid, or HS256
 *   with a public key as the secret are refused.
 * - A token that verified is remembered (up to VERIFIED_MAX tokens, oldest
 *   forgotten first) until its `exp`: clients send the same access token for
 *   its whole life, and its signature and claims cannot change, so the next
 *   request only looks it up and checks `exp` against the clock. Only the
 *   signature check is skipped: whether its user and session still exist is
 *   read from the database on every request, as before.
 */
import { Buffer } from "node:buffer";
import { jose } from "../../deps.ts";
import { AuthError } from "./errors.ts";
import { hmacBase64url, type HmacKey, hmacKey } from "../util/crypto.ts";
import type { Config } from "../config/mod.ts";

/** Claims of an access token as this server issues them. */
export interface AccessClaims {
  iss: string;
  sub: string;
  aud: string | string[];
  exp: number;
  iat: number;
  email: string;
  phone: string;
  role: string;
  app_metadata: Record<string, unknown>;
  user_metadata: Record<string, unknown>;
  aal: string;
  amr: { method: string; timestamp: number; provider?: string }[];
  session_id: string;
  is_anonymous: boolean;
  [k: string]: unknown;
}

/** A key as jose takes it (its CryptoKey type comes from node:crypto's typings). */
type Key = CryptoKey | Awaited<ReturnType<typeof jose.importJWK>>;

interface VerifyKey {
  alg: string;
  key: Key;
}

function defaultAlg(jwk: JsonWebKey): string {
  if (jwk.alg) return jwk.alg;
  if (jwk.kty === "RSA") return "RS256";
  if (jwk.kty === "EC") return jwk.crv === "P-384" ? "ES384" : "ES256";
  if (jwk.kty === "OKP") return "EdDSA";
  if (jwk.kty === "oct") return "HS256";
  throw new Error(`unsupported key type ${jwk.kty}`);
}

/** The protected header of every token signed with JWT_SECRET, base64url. */
const HS256_HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString(
  "base64url",
);

/** Verified tokens remembered at most (about 1 kB each). */
export const VERIFIED_MAX = 10_000;
/** Longer tokens are verified every time (not worth the memory). */
export const VERIFIED_TOKEN_MAX_CHARS = 4096;
/**
 * Characters of remembered tokens in all (about 800 each without metadata): a token carries the
 * user's metadata (up to 16 kB each), so tokens near VERIFIED_TOKEN_MAX_CHARS would otherwise
 * hold 10,000 × (4 kB and their claims).
 */
export const VERIFIED_MAX_CHARS = 8 << 20;

/** Signs and verifies access tokens for one configuration. */
export class JwtService {
  /** token -> its claims, for tokens that verified and carry a numeric exp and no nbf. */
  private readonly verified = new Map<string, AccessClaims>();
  /** Characters of the tokens in `verified`. */
  private verifiedChars = 0;

  private constructor(
    private readonly issuer: string,
    private readonly hsKey: CryptoKey,
    private readonly hsHmac: HmacKey,
    private readonly signer: { alg: string; kid?: string; key: Key },
    private readonly byKid: Map<string, VerifyKey>,
    private readonly publicJwks: Record<string, unknown>[],
  ) {}

  /** Imports every key once. */
  static async create(config: Config): Promise<JwtService> {
    const hsKey = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(config.jwt.secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"],
    );
    let signer: { alg: string; kid?: string; key: Key } = {
      alg: "HS256",
      key: hsKey,
    };
    const byKid = new Map<string, VerifyKey>();
    const publicJwks: Record<string, unknown>[] = [];
    for (const jwk of config.jwt.keys) {
      const alg = defaultAlg(jwk);
      // key_ops/use are ours to read, not WebCrypto's: a private key listed with
      // ["sign", "verify"] cannot be imported with both usages.
      const { key_ops: ops, use: _use, ...bare } = jwk as Record<string, unknown>;
      // Every key gets a kid (its RFC 7638 thumbprint when it has none), so a
      // token always names the one key that may verify it.
      const kid = (jwk as { kid?: string }).kid ||
        await jose.calculateJwkThumbprint(bare as jose.JWK);
      if ((ops as string[] | undefined)?.includes("sign")) {
        signer = { alg, kid, key: await jose.importJWK(bare as jose.JWK, alg) };
      }
      if (jwk.kty === "oct") {
        byKid.set(kid, { alg, key: await jose.importJWK(bare as jose.JWK, alg) });
        continue; // symmetric keys are never published
      }
      const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, oth: _oth, ...pub } = bare;
      byKid.set(kid, { alg, key: await jose.importJWK(pub as jose.JWK, alg) });
      publicJwks.push({ ...pub, kid, alg, use: "sig", key_ops: ["verify"] });
    }
    return new JwtService(
      config.api.externalUrl,
      hsKey,
      hmacKey(config.jwt.secret),
      signer,
      byKid,
      publicJwks,
    );
  }

  /** The JWT `iss` of tokens this server signs. */
  get iss(): string {
    return this.issuer;
  }

  /** Signs claims (iss is set here when absent). */
  async sign(claims: Record<string, unknown>): Promise<string> {
    if (this.signer.key === this.hsKey) return this.signHs256({ iss: this.issuer, ...claims });
    const header: jose.JWTHeaderParameters = { alg: this.signer.alg, typ: "JWT" };
    if (this.signer.kid) header.kid = this.signer.kid;
    return await new jose.SignJWT({ iss: this.issuer, ...claims }).setProtectedHeader(header).sign(
      this.signer.key,
    );
  }

  /**
   * HS256 with JWT_SECRET, synchronously (HMAC over node:crypto's SHA-256, util/crypto.ts):
   * the token jose's SignJWT makes, byte for byte (header `{"alg":"HS256","typ":"JWT"}`, the
   * claims as JSON.stringify writes them, the same TypeError for a non-finite iat/nbf/exp),
   * without its trip through WebCrypto's thread pool.
   */
  private signHs256(claims: Record<string, unknown>): string {
    for (const k of ["iat", "nbf", "exp"]) {
      const v = claims[k];
      if (typeof v === "number" && !Number.isFinite(v)) {
        throw new TypeError(`"${k}" claim must be a finite number`);
      }
    }
    const input = `${HS256_HEADER}.${
      Buffer.from(JSON.stringify(claims), "utf8").toString("base64url")
    }`;
    return `${input}.${hmacBase64url(this.hsHmac, input)}`;
  }

  /** Verifies a token; throws AuthError bad_jwt naming the reason. */
  async verify(token: string, opts: { audience?: string } = {}): Promise<AccessClaims> {
    const remember = opts.audience === undefined && token.length <= VERIFIED_TOKEN_MAX_CHARS;
    if (remember) {
      const hit = this.verified.get(token);
      if (hit !== undefined) {
        if (hit.exp > Math.floor(Date.now() / 1000)) return { ...hit };
        this.forget(token); // expired: verified again below, which says so
      }
    }
    const claims = await this.verifyFully(token, opts);
    if (remember && typeof claims.exp === "number" && claims.nbf === undefined) {
      this.forget(token);
      this.verified.set(token, { ...claims });
      this.verifiedChars += token.length;
      while (this.verified.size > VERIFIED_MAX || this.verifiedChars > VERIFIED_MAX_CHARS) {
        this.forget(this.verified.keys().next().value!);
      }
    }
    return claims;
  }

  private forget(token: string): void {
    if (this.verified.delete(token)) this.verifiedChars -= token.length;
  }

  /** How many verified tokens are remembered, and their characters (tests read them). */
  get rememberedTokens(): { count: number; chars: number } {
    return { count: this.verified.size, chars: this.verifiedChars };
  }

  private async verifyFully(token: string, opts: { audience?: string }): Promise<AccessClaims> {
    let header: jose.ProtectedHeaderParameters;
    try {
      header = jose.decodeProtectedHeader(token);
    } catch {
      throw new AuthError(
        "bad_jwt",
        "invalid JWT: unable to parse or verify signature, token is malformed",
      );
    }
    let vk: VerifyKey | undefined;
    if (header.kid !== undefined) vk = this.byKid.get(header.kid);
    else if (header.alg === "HS256") vk = { alg: "HS256", key: this.hsKey };
    if (!vk || header.alg !== vk.alg) {
      throw new AuthError(
        "bad_jwt",
        `invalid JWT: unable to parse or verify signature, ${
          header.kid !== undefined && !this.byKid.has(header.kid)
            ? "unknown key id"
            : `algorithm ${header.alg} not allowed`
        }`,
      );
    }
    try {
      const { payload } = await jose.jwtVerify(token, vk.key, {
        algorithms: [vk.alg],
        audience: opts.audience,
      });
      if (typeof payload.sub !== "string" && payload.sub !== undefined) {
        throw new Error("sub must be a string");
      }
      return payload as unknown as AccessClaims;
    } catch (e) {
      const why = e instanceof jose.errors.JWTExpired ? "token has expired" : (e as Error).message;
      throw new AuthError("bad_jwt", `invalid JWT: unable to parse or verify signature, ${why}`);
    }
  }

  /** The public keys, for `/.well-known/jwks.json`. */
  jwks(): { keys: Record<string, unknown>[] } {
    return { keys: this.publicJwks };
  }
}

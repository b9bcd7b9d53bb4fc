/**
 * A local OpenID issuer for native sign-in tests: it holds RSA and EC keys,
 * publishes their public halves as a JWKS at the paths the providers use
 * (`/oauth2/v3/certs` Google, `/auth/keys` Apple, `.../discovery/v2.0/keys`
 * Azure, `.../protocol/openid-connect/certs` Keycloak,
 * `/.well-known/oauth/openid/jwks/` Facebook), and signs real JWTs with jose,
 * as the provider's SDK on a phone would receive them. It counts key-set
 * fetches, so a test sees the cache at work, and can rotate to a new key.
 */
import { jose } from "../../deps.ts";

/** A running issuer. */
export interface LocalIssuer {
  /** Base URL (set EXTERNAL_<X>_URL to it, or a realm/tenant path under it). */
  url: string;
  /** JWKS requests served so far. */
  jwksFetches: number;
  /**
   * Signs claims with the current key (RS256 unless `alg` says ES256), or with
   * the RS256 key used before the last rotation (`previous`).
   */
  sign(
    claims: Record<string, unknown>,
    opts?: { alg?: "RS256" | "ES256"; kid?: string; previous?: boolean },
  ): Promise<string>;
  /** Signs with a key that is not published (a forged token). */
  signForged(claims: Record<string, unknown>): Promise<string>;
  /**
   * Adds a new signing key to the published set and signs with it from now
   * on; with `retire`, the set publishes only the new key from now on.
   */
  rotate(opts?: { retire?: boolean }): Promise<void>;
  close(): Promise<void>;
}

interface Key {
  kid: string;
  alg: "RS256" | "ES256";
  privateKey: jose.CryptoKey;
  jwk: jose.JWK;
}

async function newKey(alg: "RS256" | "ES256"): Promise<Key> {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
  const kid = `${alg}-${crypto.randomUUID().slice(0, 8)}`;
  return {
    kid,
    alg,
    privateKey,
    jwk: { ...(await jose.exportJWK(publicKey)), kid, alg, use: "sig" },
  };
}

const JWKS_PATHS = [
  /\/oauth2\/v3\/certs$/,
  /\/auth\/keys$/,
  /\/discovery\/v2\.0\/keys$/,
  /\/protocol\/openid-connect\/certs$/,
  /\/\.well-known\/oauth\/openid\/jwks\/$/,
];

/** Starts a local issuer on 127.0.0.1, port 0. */
export async function startLocalIssuer(): Promise<LocalIssuer> {
  const keys: Key[] = [await newKey("RS256"), await newKey("ES256")];
  let current = keys[0];
  let previous: Key | undefined;
  const forged = await newKey("RS256");
  const ac = new AbortController();
  const issuer: LocalIssuer = {
    url: "",
    jwksFetches: 0,
    async sign(claims, opts = {}) {
      const key = opts.previous
        ? previous!
        : opts.alg === "ES256"
        ? keys.find((k) => k.alg === "ES256")!
        : current;
      return await new jose.SignJWT(claims)
        .setProtectedHeader({ alg: key.alg, kid: opts.kid ?? key.kid, typ: "JWT" })
        .sign(key.privateKey);
    },
    async signForged(claims) {
      // the kid of a published key, but another key's signature
      return await new jose.SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: current.kid, typ: "JWT" })
        .sign(forged.privateKey);
    },
    async rotate(opts = {}) {
      previous = current;
      current = await newKey("RS256");
      if (opts.retire) keys.length = 0;
      keys.push(current);
    },
    close: async () => {},
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    (req) => {
      const path = new URL(req.url).pathname;
      if (req.method === "GET" && JWKS_PATHS.some((re) => re.test(path))) {
        issuer.jwksFetches++;
        return Response.json({ keys: keys.map((k) => k.jwk) });
      }
      return new Response("not found", { status: 404 });
    },
  );
  issuer.url = `http://127.0.0.1:${server.addr.port}`;
  issuer.close = async () => {
    ac.abort();
    await server.finished;
  };
  return issuer;
}

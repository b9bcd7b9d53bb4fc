/**
 * DPoP (RFC 9449): a key pair per client, a proof JWT on every request
 * (`htm`, `htu`, `iat`, `jti`, `ath` with an access token, the server's
 * nonce), one retry when the server asks for a nonce (`use_dpop_nonce`),
 * and DPoP-bound access tokens sent as `Authorization: DPoP <token>`.
 * It plugs into a client as a middleware, so every request of the client
 * (token requests, refresh, requests with the token) carries a proof.
 * @module
 */
import type { Middleware } from "../connection.ts";
import { base64url, utf8 } from "../encoding.ts";
import { randomJti, signJwt } from "../jwt.ts";
import { provenWithDpop, resendRebuilt } from "../internal.ts";

/**
 * A DPoP key and its middleware.
 *
 * @example
 * ```ts ignore
 * import { createDpop, type Dpop } from "@authsvc/oauth2/oidc";
 * const dpop: Dpop = await createDpop();
 * console.log(dpop.thumbprint); // the dpop_jkt of PAR, the cnf.jkt of bound tokens
 * ```
 */
export interface Dpop {
  /** Add to a client: `connectionBuild: (b) => void b.use(dpop.middleware)`. */
  middleware: Middleware;
  /** The public key (JWK) sent in every proof. */
  publicJwk: JsonWebKey;
  /** Its RFC 7638 thumbprint (the `cnf.jkt` of bound tokens, `dpop_jkt` of PAR/authorize). */
  thumbprint: string;
  /** A proof for one request (the middleware makes these itself). */
  proof(method: string, url: string, accessToken?: string): Promise<string>;
}

/**
 * Options of {@linkcode createDpop}.
 *
 * @example
 * ```ts ignore
 * import { createDpop, type DpopOptions } from "@authsvc/oauth2/oidc";
 * const keyPair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
 * const options: DpopOptions = { keyPair }; // keep one key across restarts (store it non-extractable)
 * const dpop = await createDpop(options);
 * ```
 */
export interface DpopOptions {
  /** An ES256 key pair to use (default: a new non-extractable one). */
  keyPair?: CryptoKeyPair;
}

async function sha256(text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8(text))));
}

/**
 * Creates a DPoP key (ES256) and the middleware that proves possession of it.
 *
 * @example
 * ```ts ignore
 * import { Client } from "@authsvc/oauth2";
 * import { createDpop } from "@authsvc/oauth2/oidc";
 * const dpop = await createDpop();
 * const client = await Client.discover("https://id.example.com", "app", "secret", {
 *   connectionBuild: (b) => void b.use(dpop.middleware),
 * });
 * const token = await client.clientCredentials.getToken(); // token_type DPoP
 * await token.get("https://api.example.com/things");        // Authorization: DPoP ..., DPoP: <proof>
 * ```
 */
export async function createDpop(options: DpopOptions = {}): Promise<Dpop> {
  const pair = options.keyPair ??
    await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
      "sign",
      "verify",
    ]) as CryptoKeyPair;
  const full = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const publicJwk: JsonWebKey = { kty: full.kty, crv: full.crv, x: full.x, y: full.y };
  const thumbprint = await sha256(
    JSON.stringify({ crv: full.crv, kty: full.kty, x: full.x, y: full.y }),
  );
  /** The latest nonce of each origin. */
  const nonces = new Map<string, string>();
  /** Access tokens issued with token_type DPoP. */
  const bound = new Set<string>();

  const proof = async (method: string, url: string, accessToken?: string) => {
    const u = new URL(url);
    const payload: Record<string, unknown> = {
      jti: randomJti(),
      htm: method.toUpperCase(),
      htu: `${u.origin}${u.pathname}`,
      iat: Math.floor(Date.now() / 1000),
    };
    const nonce = nonces.get(u.origin);
    if (nonce) payload.nonce = nonce;
    if (accessToken) payload.ath = await sha256(accessToken);
    return await signJwt(payload, pair.privateKey, "ES256", { typ: "dpop+jwt", jwk: publicJwk });
  };

  const middleware: Middleware = async (request, next) => {
    const origin = new URL(request.url).origin;
    const send = async (req: Request) => {
      const headers = new Headers(req.headers);
      const auth = /^(Bearer|DPoP)\s+(.+)$/i.exec(headers.get("authorization") ?? "");
      let token: string | undefined;
      if (auth && (auth[1].toLowerCase() === "dpop" || bound.has(auth[2]))) {
        token = auth[2];
        headers.set("authorization", `DPoP ${token}`);
      }
      headers.set("dpop", await proof(req.method, req.url, token));
      return await next(new Request(req, { headers }));
    };
    const spare = request.clone();
    let response = await send(request);
    const fresh = response.headers.get("dpop-nonce");
    if (fresh) nonces.set(origin, fresh);
    if (fresh && await asksForNonce(response)) {
      if (/(^|&)client_assertion=/.test(await spare.clone().text())) {
        // a client assertion cannot be replayed: the token request builds a new one
        resendRebuilt.add(response);
        return response;
      }
      await response.body?.cancel();
      response = await send(spare);
      const again = response.headers.get("dpop-nonce");
      if (again) nonces.set(origin, again);
    }
    if (
      response.ok && request.method === "POST" &&
      /json/i.test(response.headers.get("content-type") ?? "")
    ) {
      const body = await response.clone().json().catch(() => null);
      if (
        body && typeof body.access_token === "string" &&
        String(body.token_type).toLowerCase() === "dpop"
      ) bound.add(body.access_token);
    }
    provenWithDpop.add(response);
    return response;
  };
  return { middleware, publicJwk, thumbprint, proof };
}

/** Whether a response is the server's request to retry with its nonce. */
async function asksForNonce(response: globalThis.Response): Promise<boolean> {
  if (/use_dpop_nonce/.test(response.headers.get("www-authenticate") ?? "")) return true;
  if (response.status !== 400) return false;
  const body = await response.clone().json().catch(() => null);
  return body?.error === "use_dpop_nonce";
}

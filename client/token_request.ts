/**
 * Builds and sends a request to the token or revocation endpoint: the grant's
 * wire parameters, client authentication by `authScheme`, and `tokenMethod`.
 * @module
 */
import type { Client } from "./client.ts";
import { typeName } from "./config.ts";
import { base64, formEncode, utf8 } from "./encoding.ts";
import { importSigningKey, randomJti, signJwt } from "./jwt.ts";
import type { RequestOptions, TokenMethod, TokenParams, Verb } from "./options.ts";
import type { OAuthResponse } from "./response.ts";
import { OAuthError } from "./error.ts";
import { resendRebuilt } from "./internal.ts";

/** Sends one request (the client's request with its secrets bound). */
export type Send = (verb: Verb, url: string, opts: RequestOptions) => Promise<OAuthResponse>;

/** The `client_assertion_type` of RFC 7523 §2.2. */
export const JWT_BEARER_CLIENT_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** Seconds a client assertion is valid. */
const ASSERTION_LIFETIME = 60;

const LIBRARY_KEYS = new Set(["headers", "snaky", "snakyHashClass", "parse", "signal", "idToken"]);

const assertionKeys = new WeakMap<Client, Promise<CryptoKey>>();

const basicCache = new WeakMap<Client, string>();

/** The `Authorization` value of RFC 6749 §2.3.1 (id and secret form-encoded first). */
export function basicAuthorization(id: string, secret: string): string {
  return `Basic ${base64(utf8(`${formEncode(id)}:${formEncode(secret)}`))}`;
}

function clientBasic(client: Client): string {
  let value = basicCache.get(client);
  if (value === undefined) {
    value = basicAuthorization(client.id, client.secret);
    basicCache.set(client, value);
  }
  return value;
}

function assertionAlg(client: Client): string {
  const key = client.options.clientAssertionKey;
  if (client.options.clientAssertionAlg) return client.options.clientAssertionAlg;
  if (key && typeof key === "object" && "alg" in key && typeof key.alg === "string") return key.alg;
  if (key && typeof key === "object" && "kty" in key) {
    if (key.kty === "EC") return key.crv === "P-384" ? "ES384" : "ES256";
    if (key.kty === "OKP") return "EdDSA";
  }
  return "RS256";
}

/** The algorithms the FAPI 2.0 Security Profile allows (§5.4). */
const FAPI_ALGS = new Set(["PS256", "ES256", "EdDSA"]);

/** The signing algorithm of `private_key_jwt` (and JAR), checked against the client's profile. */
export function clientSigningAlg(client: Client): string {
  const alg = assertionAlg(client);
  if (client.options.profile === "fapi2" && !FAPI_ALGS.has(alg)) {
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

/**
 * Sends `params` to `endpoint` with the client's authentication.
 *
 * @param client the client
 * @param endpoint the absolute endpoint URL
 * @param params wire parameters plus library keys (`headers`, `snaky` ...)
 * @param send the request function
 * @param method overrides `client.options.tokenMethod`
 */
export function tokenRequest(
  client: Client,
  endpoint: string,
  params: TokenParams,
  send: Send,
  method: TokenMethod = client.options.tokenMethod,
): Promise<OAuthResponse> {
  if (params.headers !== undefined && (typeof params.headers !== "object" || !params.headers)) {
    return Promise.reject(
      new TypeError(`"params.headers" must be an object, got ${typeName(params.headers)}`),
    );
  }
  const form: Record<string, unknown> = {};
  for (const k in params) {
    const v = params[k];
    if (v !== undefined && v !== null && !LIBRARY_KEYS.has(k)) form[k] = v;
  }
  const headers: Record<string, string> = {};
  const extra = params.headers;
  if (extra) { for (const k in extra) headers[k.toLowerCase()] = extra[k]; }
  switch (client.options.authScheme) {
    // The caller's credentials win over the client's (as in the gem's Authenticator).
    case "basic_auth":
      if (!("authorization" in headers)) headers.authorization = clientBasic(client);
      break;
    case "request_body":
      if (!("client_id" in form)) form.client_id = client.id;
      if (!("client_secret" in form)) form.client_secret = client.secret;
      break;
    case "tls_client_auth":
      if (!("client_id" in form)) form.client_id = client.id;
      break;
    case "private_key_jwt": {
      form.client_id = client.id;
      form.client_assertion_type = JWT_BEARER_CLIENT_ASSERTION;
      const attempt = () =>
        clientAssertion(client, endpoint).then((assertion) =>
          sendForm(
            params,
            { ...form, client_assertion: assertion },
            { ...headers },
            endpoint,
            send,
            method,
          )
        );
      // A fresh assertion when the request must be sent again (a DPoP nonce challenge).
      return attempt().then(
        (res) => resendRebuilt.has(res.response) ? attempt() : res,
        (e) => {
          if (e instanceof OAuthError && resendRebuilt.has(e.response.response)) return attempt();
          throw e;
        },
      );
    }
  }
  // Not an async function: the common schemes need no await before sending.
  return sendForm(params, form, headers, endpoint, send, method);
}

function sendForm(
  params: TokenParams,
  form: Record<string, unknown>,
  headers: Record<string, string>,
  endpoint: string,
  send: Send,
  method: TokenMethod,
): Promise<OAuthResponse> {
  if (!("accept" in headers)) headers.accept = "application/json";
  const options: RequestOptions = { headers };
  if (params.snaky !== undefined) options.snaky = params.snaky as boolean;
  if (params.snakyHashClass) {
    options.snakyHashClass = params.snakyHashClass as RequestOptions["snakyHashClass"];
  }
  if (params.parse !== undefined) options.parse = params.parse as RequestOptions["parse"];
  if (params.signal) options.signal = params.signal as AbortSignal;
  if (method === "get" || method === "post_with_query_string") {
    options.params = form as RequestOptions["params"];
    return send(method === "get" ? "get" : "post", endpoint, options);
  }
  if (!("content-type" in headers)) headers["content-type"] = "application/x-www-form-urlencoded";
  options.body = form;
  return send("post", endpoint, options);
}

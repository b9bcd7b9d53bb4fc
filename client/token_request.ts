/**
 * Builds and sends a request to the token or revocation endpoint: the grant's
 * wire parameters, client authentication by `authScheme`, and `tokenMethod`.
 * @module
 */
import type { BaseClient } from "./base_client.ts";
import { mistyped } from "./config.ts";
import { base64, utf8 } from "./encoding.ts";
import type { RequestOptions, TokenMethod, TokenParams, Verb } from "./options.ts";
import { resendRebuilt } from "./internal.ts";
import { formBody, formEncodeValue } from "./url.ts";

/** Sends one request (the client's request with its secrets bound); the answer has the fetch `response`. */
export type Send<T extends { response: globalThis.Response }> = (
  verb: Verb,
  url: string,
  opts: RequestOptions,
) => Promise<T>;

const FORM_TYPE = "application/x-www-form-urlencoded";

/** Keys of token parameters that are the library's, not the wire's. */
const LIBRARY_KEYS = new Set(["headers", "snaky", "snakyHashClass", "parse", "signal", "idToken"]);

const basicCache = new WeakMap<BaseClient, string>();

/** The `Authorization` value of RFC 6749 §2.3.1 (id and secret form-encoded first). */
export function basicAuthorization(id: string, secret: string): string {
  return `Basic ${base64(utf8(`${formEncodeValue(id)}:${formEncodeValue(secret)}`))}`;
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
export function tokenRequest<T extends { response: globalThis.Response }>(
  client: BaseClient,
  endpoint: string,
  params: TokenParams,
  send: Send<T>,
  method: TokenMethod = client.options.tokenMethod,
): Promise<T> {
  const extra = params.headers;
  if (extra !== undefined && (typeof extra !== "object" || !extra)) {
    return Promise.reject(mistyped("token request", "params.headers", "an object", extra));
  }
  const headers: Record<string, string> = {};
  for (const k in extra) headers[k.toLowerCase()] = extra[k];
  // The client's authentication; the caller's credentials win (as in the gem's Authenticator),
  // but for private_key_jwt, whose fields are the client's to set.
  let auth: Record<string, string> | undefined;
  const { id, secret, options: { authScheme } } = client;
  if (authScheme === "basic_auth") {
    if (!("authorization" in headers)) {
      let basic = basicCache.get(client);
      if (basic === undefined) basicCache.set(client, basic = basicAuthorization(id, secret));
      headers.authorization = basic;
    }
  } else if (authScheme === "private_key_jwt") {
    const own = {
      client_id: id,
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
    };
    const skip = new Set([...LIBRARY_KEYS, ...Object.keys(own), "client_assertion"]);
    const attempt = () =>
      import("./client_assertion.ts").then((m) => m.clientAssertion(client, endpoint)).then((
        assertion,
      ) =>
        sendForm(
          params,
          { ...own, client_assertion: assertion },
          { ...headers },
          endpoint,
          send,
          method,
          skip,
        )
      );
    // A fresh assertion when the request must be sent again (a DPoP nonce challenge).
    return attempt().then(
      (res) => resendRebuilt.has(res.response) ? attempt() : res,
      (e) => {
        // An OAuthError (raiseErrors) with its response
        if (resendRebuilt.has((e as { response?: { response: Response } })?.response?.response!)) {
          return attempt();
        }
        throw e;
      },
    );
  } else {
    // request_body sends both; tls_client_auth only the id (the certificate authenticates).
    auth = {};
    if (params.client_id == null) auth.client_id = id;
    if (authScheme === "request_body" && params.client_secret == null) auth.client_secret = secret;
  }
  // Not an async function: the common schemes need no await before sending.
  return sendForm(params, auth, headers, endpoint, send, method);
}

/** Sends `params` (but the keys in `skip`) and the client's `auth` fields as a form or a query. */
function sendForm<T extends { response: globalThis.Response }>(
  params: TokenParams,
  auth: Record<string, string> | undefined,
  headers: Record<string, string>,
  endpoint: string,
  send: Send<T>,
  method: TokenMethod,
  skip: ReadonlySet<string> = LIBRARY_KEYS,
): Promise<T> {
  headers.accept ??= "application/json";
  const options: RequestOptions = { headers, signal: params.signal };
  if (params.snaky !== undefined) options.snaky = params.snaky;
  if (params.snakyHashClass) options.snakyHashClass = params.snakyHashClass;
  if (params.parse !== undefined) options.parse = params.parse;
  const query = method === "get" || method === "post_with_query_string";
  const type = query ? headers["content-type"] : headers["content-type"] ??= FORM_TYPE;
  if (query || type !== FORM_TYPE) {
    // The wire parameters as a record: for the query, or a body of the caller's content type.
    const form: Record<string, unknown> = {};
    for (const k in params) if (!skip.has(k) && params[k] != null) form[k] = params[k];
    Object.assign(form, auth);
    if (query) {
      options.params = form as RequestOptions["params"];
      return send(method === "get" ? "get" : "post", endpoint, options);
    }
    options.body = form;
  } else {
    const own = formBody(params, skip);
    const added = auth ? formBody(auth) : "";
    options.body = own && added ? `${own}&${added}` : own || added;
  }
  return send("post", endpoint, options);
}

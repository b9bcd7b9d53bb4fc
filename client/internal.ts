/**
 * Package-internal wiring: lets `AccessToken` send a request through its
 * client with extra secrets to redact, without a public method for it.
 * `bodyCredential` says that the body carries a credential (a token in
 * `mode: "body"`), so that it is never resent to another origin.
 * @module
 */
import type { OAuthResponse } from "./response.ts";
import type { RequestOptions, Verb } from "./options.ts";

/** A client's request function that also takes literal secrets to redact. */
export type Requester = (
  verb: Verb,
  url: string,
  opts: RequestOptions,
  secrets: readonly (string | undefined)[],
  bodyCredential?: boolean,
) => Promise<OAuthResponse>;

const requesters = new WeakMap<object, Requester>();

/** Registers the requester of a client (called by its constructor). */
export function registerRequester(client: object, requester: Requester): void {
  requesters.set(client, requester);
}

/** Sends a request through `client`, redacting `secrets` in its errors and logs. */
export function internalRequest(
  client: { request(verb: Verb, url: string, opts?: RequestOptions): Promise<OAuthResponse> },
  verb: Verb,
  url: string,
  opts: RequestOptions,
  secrets: readonly (string | undefined)[],
  bodyCredential = false,
): Promise<OAuthResponse> {
  const requester = requesters.get(client);
  return requester
    ? requester(verb, url, opts, secrets, bodyCredential)
    : client.request(verb, url, opts);
}

/**
 * Responses to requests that carried a DPoP proof (marked by the DPoP
 * middleware of `@authsvc/oauth2/oidc`): their token must be a DPoP token
 * (RFC 9449 §5).
 */
export const provenWithDpop: WeakSet<globalThis.Response> = new WeakSet();

/**
 * Responses after which the request must be built again and resent once,
 * because its body carries a one-time credential (a `private_key_jwt`
 * assertion, whose `jti` cannot be replayed) that a middleware could not
 * simply resend: the DPoP middleware marks its nonce challenges so.
 */
export const resendRebuilt: WeakSet<globalThis.Response> = new WeakSet();

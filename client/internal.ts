/**
 * Package-internal wiring: the transport of each client (so that `Client`,
 * `AccessToken` and the `oidc` helpers send through it without a public
 * method for it), and the marks the DPoP middleware of
 * `@authsvc/oauth2/oidc` leaves on responses.
 * @module
 */
import type { Transport } from "./transport.ts";

const transports = new WeakMap<object, Transport>();

/** Registers the transport of a client (called by its constructor). */
export function registerTransport(client: object, transport: Transport): void {
  transports.set(client, transport);
}

/** The transport of `client`, when it is one of the library's clients. */
export function transportOf(client: object): Transport | undefined {
  return transports.get(client);
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

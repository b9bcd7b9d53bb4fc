/**
 * A request whose answer is an `OAuthResponse`: `Client.request`, the
 * requests of an `AccessToken` and of the `oidc` helpers. A status of 400 or
 * above is an `OAuthError`, thrown or (with `raiseErrors: false`) attached.
 * @module
 */
import { OAuthError } from "./error.ts";
import { transportOf } from "./internal.ts";
import type { RequestOptions, Verb } from "./options.ts";
import { OAuthResponse, type ResponseOptions } from "./response.ts";
import type { Transport } from "./transport.ts";

const NO_PARSE_OPTIONS: Readonly<ResponseOptions> = /* @__PURE__ */ Object.freeze({});

/**
 * Sends a request through `transport` (see `Transport.exchange`) and wraps
 * the answer.
 *
 * @param raiseErrors the client's `raiseErrors` (the request's option wins)
 */
export async function sendRequest(
  transport: Transport,
  raiseErrors: boolean,
  verb: Verb,
  url: string,
  opts: RequestOptions,
  secrets: readonly (string | undefined)[],
  tokenEndpoint?: boolean,
  bodyCredential?: boolean,
): Promise<OAuthResponse> {
  const answer = await transport.exchange(verb, url, opts, secrets, tokenEndpoint, bodyCredential);
  const result = new OAuthResponse(
    answer.response,
    answer.text,
    opts.parse === undefined && opts.snaky === undefined && opts.snakyHashClass === undefined
      ? NO_PARSE_OPTIONS
      : { parse: opts.parse, snaky: opts.snaky, snakyHashClass: opts.snakyHashClass },
  );
  if (result.status >= 400) {
    const error = new OAuthError(result, { secrets: answer.secrets });
    if (opts.raiseErrors ?? raiseErrors) throw error;
    result.error = error;
  }
  return result;
}

/**
 * Sends a request through `client`, redacting `secrets` in its errors and
 * logs; `bodyCredential` says that the body carries a credential (a token in
 * `mode: "body"`), so that it is never resent to another origin.
 */
export function internalRequest(
  client: {
    options: { raiseErrors: boolean };
    request(verb: Verb, url: string, opts?: RequestOptions): Promise<OAuthResponse>;
  },
  verb: Verb,
  url: string,
  opts: RequestOptions,
  secrets: readonly (string | undefined)[],
  bodyCredential = false,
): Promise<OAuthResponse> {
  const transport = transportOf(client);
  return transport
    ? sendRequest(
      transport,
      client.options.raiseErrors,
      verb,
      url,
      opts,
      secrets,
      false,
      bodyCredential,
    )
    : client.request(verb, url, opts);
}

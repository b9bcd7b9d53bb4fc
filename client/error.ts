/**
 * Errors the client throws: `OAuthError` for a provider's error response,
 * `ConnectionError` when no response arrived (network failure, timeout).
 * @module
 */
import { OAuthResponse } from "./response.ts";
import { redactText } from "./redact.ts";

/**
 * Overrides for an error built by the library rather than read from the body.
 *
 * @example
 * ```ts
 * import { OAuthError, OAuthResponse } from "@authsvc/oauth2";
 * const res = await OAuthResponse.from(new Response("{}", { status: 200 }));
 * const err = new OAuthError(res, { code: "invalid_token_response", description: "no access_token" });
 * console.log(err.message); // "invalid_token_response: no access_token\n{}"
 * ```
 */
export interface OAuthErrorDetails {
  /** Error code (defaults to the body's `error`). */
  code?: string;
  /** Error description (defaults to the body's `error_description`). */
  description?: string;
  /** Literal values to keep out of the message (the client secret, tokens). */
  secrets?: readonly (string | undefined)[];
}

/**
 * An error response of the provider (status 400 or above, or a token response
 * without a token). `code` and `description` carry `error` and
 * `error_description` of a standard error body; `response` is always present.
 *
 * @example
 * ```ts ignore
 * import { Client, OAuthError } from "@authsvc/oauth2";
 * const client = new Client("id", "wrong-secret", { site: "https://id.example.com" });
 * try {
 *   await client.clientCredentials.getToken();
 * } catch (e) {
 *   if (e instanceof OAuthError) console.log(e.code, e.description, e.response.status); // "invalid_client" ... 401
 *   else throw e;
 * }
 * ```
 */
export class OAuthError extends Error {
  /** The `error` parameter of a standard error body. */
  code?: string;
  /** The `error_description` parameter of a standard error body. */
  description?: string;
  /** The response that caused this error. */
  response: OAuthResponse;

  /**
   * Creates an instance.
   *
   * @param response the provider's response; or an error body already parsed
   *   (a record or an array, as the gem's `OAuth2::Error.new(hash)`), which
   *   becomes the JSON body of `response`
   * @param details code and description when they do not come from the body
   */
  constructor(
    response: OAuthResponse | Record<string, unknown> | unknown[],
    details: OAuthErrorDetails = {},
  ) {
    if (!(response instanceof OAuthResponse)) response = responseOf(response);
    const hash = response.parsedHash;
    const code = details.code ?? (typeof hash?.error === "string" ? hash.error : undefined);
    const description = details.description ??
      (typeof hash?.error_description === "string" ? hash.error_description : undefined);
    const body = redactText(response.body, details.secrets);
    // As the gem: "<code>: <description>" (either part may be missing), a newline, the body.
    let message: string;
    if (code !== undefined || description !== undefined) {
      message = `${code !== undefined ? `${code}: ` : ""}${description ?? ""}`;
      if (body) message += `\n${body}`;
    } else {
      message = body || `HTTP ${response.status}`;
    }
    super(message);
    this.name = "OAuthError";
    this.code = code;
    this.description = description;
    this.response = response;
  }
}

/** A response whose JSON body is `value` (an error body the caller already has). */
function responseOf(value: unknown): OAuthResponse {
  if (value === null || typeof value !== "object") {
    throw new TypeError(`OAuthError: "response" must be an OAuthResponse, a record or an array`);
  }
  const body = JSON.stringify(value);
  return new OAuthResponse(
    new Response(body, { headers: { "content-type": "application/json" } }),
    body,
  );
}

/**
 * Why a request got no response.
 *
 * @example
 * ```ts ignore
 * import { Client, ConnectionError, type ConnectionErrorKind } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://id.example.com", connectionOpts: { timeout: 2_000 } });
 * try {
 *   await client.clientCredentials.getToken();
 * } catch (e) {
 *   const kind: ConnectionErrorKind | undefined = e instanceof ConnectionError ? e.kind : undefined;
 *   if (kind === "timeout") console.log("retry later");
 * }
 * ```
 */
export type ConnectionErrorKind = "timeout" | "network" | "aborted";

/**
 * No response arrived: the connection failed, the timeout passed or the
 * request was aborted. The message names the method and URL (redacted) and
 * the cause; it never holds a secret.
 *
 * @example
 * ```ts ignore
 * import { Client, ConnectionError } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "http://127.0.0.1:1" });
 * try {
 *   await client.clientCredentials.getToken();
 * } catch (e) {
 *   if (e instanceof ConnectionError) console.log(e.message); // "POST http://127.0.0.1:1/oauth/token failed: ..."
 * }
 * ```
 */
export class ConnectionError extends Error {
  /** What went wrong. */
  kind: ConnectionErrorKind;
  /** HTTP method of the request. */
  method: string;
  /** The request URL, with sensitive query parameters redacted. */
  url: string;

  /**
   * Creates an instance.
   *
   * @param kind what went wrong
   * @param method request method
   * @param url request URL (redacted here)
   * @param detail what happened, in words
   * @param cause the underlying error (its message is redacted too)
   * @param secrets literal values to keep out of the message
   */
  constructor(
    kind: ConnectionErrorKind,
    method: string,
    url: string,
    detail: string,
    cause?: unknown,
    secrets: readonly (string | undefined)[] = [],
  ) {
    const safeUrl = redactText(url, secrets);
    const safeCause = cause === undefined ? undefined : sanitizeCause(cause, secrets);
    super(
      redactText(`${method} ${safeUrl} failed: ${detail}`, secrets),
      safeCause ? { cause: safeCause } : undefined,
    );
    this.name = "ConnectionError";
    this.kind = kind;
    this.method = method;
    this.url = safeUrl;
  }
}

function sanitizeCause(cause: unknown, secrets: readonly (string | undefined)[]): Error {
  const err = cause instanceof Error ? cause : new Error(String(cause));
  const copy = new Error(redactText(err.message, secrets));
  copy.name = err.name;
  return copy;
}

/** The message of an underlying error, redacted, for a `ConnectionError` detail. */
export function describeCause(cause: unknown, secrets: readonly (string | undefined)[]): string {
  if (cause instanceof Error) {
    const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : "";
    return redactText(`${cause.name}: ${cause.message}${inner}`, secrets);
  }
  return redactText(String(cause), secrets);
}

/**
 * The `ConnectionError` of a request that got no answer: its timeout of
 * `timeout` ms passed (`expired`), the caller aborted it, or the network
 * failed (`cause`, redacted).
 */
export function connectionFailure(
  cause: unknown,
  expired: boolean,
  aborted: boolean,
  timeout: number,
  method: string,
  url: string,
  secrets: readonly (string | undefined)[],
): ConnectionError {
  const [kind, detail] = expired && !aborted
    ? [
      "timeout",
      `no response within the timeout of ${timeout} ms (connectionOpts.timeout)`,
    ] as const
    : aborted
    ? ["aborted", "aborted"] as const
    : ["network", describeCause(cause, secrets)] as const;
  return new ConnectionError(kind, method, url, detail, cause, secrets);
}

/**
 * The debug log lines of requests and responses, always redacted; loaded
 * only by a client with `debug` on (`OAUTH_DEBUG=true`).
 * @module
 */
import type { Logger } from "./logger.ts";
import { type RedactionFilter, redactWith } from "./redact.ts";

function bodyText(body: unknown): string {
  if (body === undefined || body === null || body === "") return "";
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return `[${body.byteLength} bytes]`;
  return JSON.stringify(body);
}

/** Logs a request: method, URL, headers and body, all redacted. */
export function logRequest(
  logger: Logger,
  method: string,
  url: string,
  headers: Headers | Record<string, string>,
  body: unknown,
  secrets: readonly (string | undefined)[],
  filter: RedactionFilter,
): void {
  const redact = (v: unknown) => redactWith(v, secrets, filter);
  const text = bodyText(body);
  logger.debug(
    `oauth2 request: ${method} ${redact(url)}\n` +
      `headers: ${JSON.stringify(redact(headers))}` +
      (text ? `\nbody: ${redact(text)}` : ""),
  );
}

/** Logs a response: status, headers and body, all redacted. */
export function logResponse(
  logger: Logger,
  status: number,
  url: string,
  headers: Headers,
  body: string,
  secrets: readonly (string | undefined)[],
  filter: RedactionFilter,
): void {
  const redact = (v: unknown) => redactWith(v, secrets, filter);
  logger.debug(
    `oauth2 response: ${status} ${redact(url)}\n` +
      `headers: ${JSON.stringify(redact(headers))}` +
      (body ? `\nbody: ${redact(body)}` : ""),
  );
}

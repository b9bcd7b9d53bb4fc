/** The logger interface and the debug log lines (always redacted). @module */
import { currentFilter, type RedactionFilter, redactWith } from "./redact.ts";

/**
 * Where debug output and warnings go; `console` fits.
 *
 * @example
 * ```ts
 * import { Client, type Logger } from "@authsvc/oauth2";
 * const lines: string[] = [];
 * const logger: Logger = {
 *   debug: (...a) => void lines.push(a.join(" ")),
 *   info: console.info,
 *   warn: console.warn,
 *   error: console.error,
 * };
 * new Client("id", "secret", { site: "https://id.example.com", logger, debug: true });
 * ```
 */
export interface Logger {
  /** Debug lines (requests and responses when `OAUTH_DEBUG=true`). */
  debug(...args: unknown[]): void;
  /** Informational lines. */
  info(...args: unknown[]): void;
  /** Warnings (extra or missing token fields, unsupported options). */
  warn(...args: unknown[]): void;
  /** Errors. */
  error(...args: unknown[]): void;
}

/** Whether `value` has the four logger methods. */
export function isLogger(value: unknown): value is Logger {
  return value !== null && typeof value === "object" &&
    ["debug", "info", "warn", "error"].every((m) =>
      typeof (value as Record<string, unknown>)[m] === "function"
    );
}

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
  filter: RedactionFilter = currentFilter(),
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
  filter: RedactionFilter = currentFilter(),
): void {
  const redact = (v: unknown) => redactWith(v, secrets, filter);
  logger.debug(
    `oauth2 response: ${status} ${redact(url)}\n` +
      `headers: ${JSON.stringify(redact(headers))}` +
      (body ? `\nbody: ${redact(body)}` : ""),
  );
}

/** The logger interface. @module */

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

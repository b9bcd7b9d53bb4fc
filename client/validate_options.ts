/** Argument checks of `new Client(...)`: a TypeError naming the argument. @module */
import { typeName } from "./config.ts";
import type { ConnectionOptions } from "./connection.ts";
import { isLogger } from "./logger.ts";
import type { ClientOptions } from "./options.ts";

const SCHEMES = new Set(["basic_auth", "request_body", "tls_client_auth", "private_key_jwt"]);
const TOKEN_METHODS = new Set(["post", "get", "post_with_query_string"]);

function checkString(value: unknown, name: string, where: string): void {
  if (value !== undefined && typeof value !== "string") {
    throw new TypeError(`${where}: "${name}" must be a string, got ${typeName(value)}`);
  }
}

/**
 * Checks the arguments of `new Client(id, secret, options)`.
 *
 * @returns the connection options (an empty object when absent)
 * @throws {TypeError} naming the first argument or option of the wrong type
 */
export function validateClientArguments(
  id: unknown,
  secret: unknown,
  options: ClientOptions,
): ConnectionOptions {
  if (typeof id !== "string") {
    throw new TypeError(`Client: "id" must be a string, got ${typeName(id)}`);
  }
  if (typeof secret !== "string") {
    throw new TypeError(`Client: "secret" must be a string, got ${typeName(secret)}`);
  }
  if (!options || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Client: "options" must be an object, got ${typeName(options)}`);
  }
  for (const k of ["site", "authorizeUrl", "tokenUrl", "revokeUrl", "redirectUri"] as const) {
    checkString(options[k], k, "Client");
  }
  if (options.site !== undefined) {
    try {
      new URL(options.site);
    } catch {
      throw new TypeError(`Client: "site" must be an absolute URL, got "${options.site}"`);
    }
  }
  if (options.authScheme !== undefined && !SCHEMES.has(options.authScheme)) {
    throw new TypeError(
      `Client: "authScheme" must be one of ${[...SCHEMES].join(", ")}, got "${options.authScheme}"`,
    );
  }
  if (options.tokenMethod !== undefined && !TOKEN_METHODS.has(options.tokenMethod)) {
    throw new TypeError(
      `Client: "tokenMethod" must be one of ${[...TOKEN_METHODS].join(", ")}, ` +
        `got "${options.tokenMethod}"`,
    );
  }
  if (
    options.maxRedirects !== undefined &&
    !(Number.isInteger(options.maxRedirects) && options.maxRedirects >= 0)
  ) {
    throw new TypeError(`Client: "maxRedirects" must be a non-negative integer`);
  }
  const conn = options.connectionOpts ?? {};
  if (typeof conn !== "object" || Array.isArray(conn)) {
    throw new TypeError(`Client: "connectionOpts" must be an object, got ${typeName(conn)}`);
  }
  if (conn.timeout !== undefined && (typeof conn.timeout !== "number" || conn.timeout < 0)) {
    throw new TypeError(`Client: "connectionOpts.timeout" must be a number of milliseconds`);
  }
  if (conn.fetch !== undefined && typeof conn.fetch !== "function") {
    throw new TypeError(`Client: "connectionOpts.fetch" must be a function`);
  }
  if (options.logger !== undefined && !isLogger(options.logger)) {
    throw new TypeError(`Client: "logger" must have debug, info, warn and error methods`);
  }
  if (options.connectionBuild !== undefined && typeof options.connectionBuild !== "function") {
    throw new TypeError(`Client: "connectionBuild" must be a function`);
  }
  checkHeaderNames(options.credentialHeaders, 'Client: "credentialHeaders"');
  if (options.profile !== undefined && options.profile !== "fapi2") {
    throw new TypeError(
      `Client: "profile" must be "fapi2" or absent, got ${typeName(options.profile)}`,
    );
  }
  if (options.authScheme === "private_key_jwt" && !options.clientAssertionKey) {
    throw new TypeError(`Client: "clientAssertionKey" is required for private_key_jwt`);
  }
  return conn;
}

/** Checks a list of header names (`credentialHeaders`). */
export function checkHeaderNames(value: unknown, what: string): void {
  if (value === undefined) return;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || v === "")) {
    throw new TypeError(`${what} must be an array of header names, got ${typeName(value)}`);
  }
}

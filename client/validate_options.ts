/** Argument checks of `new Client(...)`: a TypeError naming the argument. @module */
import { isRecord, mistyped, typeName } from "./config.ts";
import type { ConnectionOptions } from "./connection.ts";
import type { ClientOptions } from "./options.ts";

const SCHEMES = ["basic_auth", "request_body", "tls_client_auth", "private_key_jwt"];
const TOKEN_METHODS = ["post", "get", "post_with_query_string"];

const isFunction = (v: unknown) => typeof v === "function";
const isString = (v: unknown) => typeof v === "string";
const oneOf = (values: string[]) =>
  [
    (v: unknown) => values.includes(v as string),
    `one of ${values.join(", ")}`,
  ] as const;

/** Each option with its check and what it must be (absent options are not checked). */
const RULES: [string, (v: unknown) => boolean, string][] = [
  ["site", (v) => isString(v) && absolute(v as string), "an absolute URL"],
  ["authorizeUrl", isString, "a string"],
  ["tokenUrl", isString, "a string"],
  ["revokeUrl", isString, "a string"],
  ["redirectUri", isString, "a string"],
  ["authScheme", ...oneOf(SCHEMES)],
  ["tokenMethod", ...oneOf(TOKEN_METHODS)],
  ["maxRedirects", (v) => Number.isInteger(v) && (v as number) >= 0, "a non-negative integer"],
  ["connectionOpts", isRecord, "an object"],
  ["logger", isLogger, "a logger (debug, info, warn and error methods)"],
  ["connectionBuild", isFunction, "a function"],
  ["credentialHeaders", isHeaderNames, "an array of header names"],
  ["profile", (v) => v === "fapi2", `"fapi2" or absent`],
];

function absolute(url: string): boolean {
  try {
    return !!new URL(url);
  } catch {
    return false;
  }
}

function isLogger(v: unknown): boolean {
  return isRecord(v) &&
    ["debug", "info", "warn", "error"].every((m) => isFunction((v as Record<string, unknown>)[m]));
}

function isHeaderNames(v: unknown): boolean {
  return Array.isArray(v) && v.every((h) => isString(h) && h !== "");
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
  if (!isString(id)) throw mistyped("Client", "id", "a string", id);
  if (!isString(secret)) throw mistyped("Client", "secret", "a string", secret);
  if (!isRecord(options)) throw mistyped("Client", "options", "an object", options);
  for (const [name, ok, expected] of RULES) {
    const value = (options as Record<string, unknown>)[name];
    if (value !== undefined && !ok(value)) {
      const got = isString(value) ? `"${value}"` : typeName(value);
      throw new TypeError(`Client: "${name}" must be ${expected}, got ${got}`);
    }
  }
  const conn = options.connectionOpts ?? {};
  const { timeout, fetch } = conn;
  if (timeout !== undefined && !(typeof timeout === "number" && timeout >= 0)) {
    throw mistyped("Client", "connectionOpts.timeout", "a number of milliseconds", timeout);
  }
  if (fetch !== undefined && !isFunction(fetch)) {
    throw mistyped("Client", "connectionOpts.fetch", "a function", fetch);
  }
  if (options.authScheme === "private_key_jwt" && !options.clientAssertionKey) {
    throw new TypeError(`Client: "clientAssertionKey" is required for private_key_jwt`);
  }
  return conn;
}

/** Checks a list of header names (`credentialHeaders`). */
export function checkHeaderNames(value: unknown, where: string): void {
  if (value !== undefined && !isHeaderNames(value)) {
    throw mistyped(where, "credentialHeaders", "an array of header names", value);
  }
}

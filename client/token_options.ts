/**
 * The option types of `AccessToken` and the parsing of token response
 * fields: numbers sent as strings, dates, transmission modes.
 * @module
 */

/**
 * Where the token goes on a request.
 *
 * @example
 * ```ts
 * import { AccessToken, Client, type TokenPlacement } from "@authsvc/oauth2";
 * const placement: TokenPlacement = "query";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const token = new AccessToken(client, "abc", { mode: placement });
 * console.log(token.placement("get")); // "query"
 * ```
 */
export type TokenPlacement = "header" | "query" | "body";

/**
 * `mode`: one placement, a function of the verb, or a map by verb.
 *
 * @example
 * ```ts
 * import { AccessToken, Client, type TokenMode } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const byVerb: TokenMode = { get: "query", post: "header", put: "body" };
 * const byFunction: TokenMode = (verb) => (verb === "get" ? "query" : "header");
 * new AccessToken(client, "abc", { mode: byVerb });
 * new AccessToken(client, "abc", { mode: byFunction });
 * ```
 */
export type TokenMode =
  | TokenPlacement
  | ((verb: string) => TokenPlacement)
  | Partial<Record<string, TokenPlacement>>;

/**
 * Options of an `AccessToken` (token response fields are accepted too).
 *
 * @example
 * ```ts
 * import { AccessToken, type AccessTokenOptions, Client } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const opts: AccessTokenOptions = { refresh_token: "r1", expires_in: "3600", expires_latency: 30, header_format: "Bearer %s" };
 * const token = new AccessToken(client, "abc", opts);
 * console.log(token.expired()); // false
 * ```
 */
export interface AccessTokenOptions {
  /** The refresh token. */
  refresh_token?: string;
  /** Seconds until expiry (numbers in strings are accepted). */
  expires_in?: number | string;
  /** Expiry as epoch seconds (or a date string). */
  expires_at?: number | string;
  /** Seconds taken off `expires_at`, to refresh early. */
  expires_latency?: number;
  /** How the token is sent; default `"header"`. */
  mode?: TokenMode;
  /** Authorization header format; default `"Bearer %s"`. */
  header_format?: string;
  /** Parameter name in query and body mode; default `"access_token"`. */
  param_name?: string;
  /** Which response field is the token. */
  token_name?: string;
  /** Other fields, kept in `params`. */
  [extra: string]: unknown;
}

/**
 * The normalized transmission options of a token.
 *
 * @example
 * ```ts
 * import { AccessToken, Client } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const token = new AccessToken(client, "abc", { param_name: "oauth_token" });
 * console.log(token.options); // { mode: "header", header_format: "Bearer %s", param_name: "oauth_token" }
 * ```
 */
export interface TokenTransmission {
  /** How the token is sent. */
  mode: TokenMode;
  /** Authorization header format. */
  header_format: string;
  /** Parameter name in query and body mode. */
  param_name: string;
  /** Which response field is the token. */
  token_name?: string;
}

/** Response fields that can hold the token, in order of preference. */
export const TOKEN_KEYS: readonly string[] = [
  "access_token",
  "id_token",
  "token",
  "accessToken",
  "idToken",
];
/**
 * Whether `key` is a field of the token options that the token reads itself
 * (the rest is `params`). A `switch` on the names: every token response runs
 * it for each of its fields, and it is about half the cost of a `Set`.
 */
export function isTokenField(key: string): boolean {
  switch (key) {
    case "refresh_token":
    case "expires_in":
    case "expires_at":
    case "expires_latency":
    case "expires":
    case "mode":
    case "header_format":
    case "param_name":
    case "token_name":
      return true;
  }
  return false;
}
/** The places a token can go. */
export const PLACEMENTS: ReadonlySet<string> = new Set(["header", "query", "body"]);
/** The current time in epoch seconds. */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** An integer from a number or a numeric string; undefined otherwise. */
export function toInteger(value: unknown): number | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  const n = typeof value === "number" ? value : Number(String(value).trim());
  return Number.isFinite(n) ? Math.trunc(n) : undefined;
}

/** Epoch seconds from a number, a numeric string or a date string. */
export function toEpoch(value: unknown): number | undefined {
  const n = toInteger(value);
  if (n !== undefined || typeof value !== "string") return n;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** Validates a `mode` option. */
export function checkMode(mode: unknown): TokenMode {
  if (PLACEMENTS.has(mode as string) || typeof mode === "function") return mode as TokenMode;
  if (mode && typeof mode === "object" && !Array.isArray(mode)) {
    for (const [verb, p] of Object.entries(mode)) {
      if (!PLACEMENTS.has(p)) {
        throw new TypeError(`"mode.${verb}" must be "header", "query" or "body", got "${p}"`);
      }
    }
    return mode as Partial<Record<string, TokenPlacement>>;
  }
  throw new TypeError(
    `"mode" must be "header", "query", "body", a function or a map by verb, got ${
      typeof mode === "string" ? `"${mode}"` : typeof mode
    }`,
  );
}

/**
 * `OAuthResponse`: a fetched response with its body read and parsed by the
 * rules of the Ruby gem's `OAuth2::Response` (docs/client.md).
 * @module
 */
import { snakeCase, SnakyHash } from "./snaky_hash.ts";
import type { OAuthError } from "./error.ts";

/**
 * How a body is parsed: by content type (`automatic`) or forced.
 *
 * @example
 * ```ts
 * import { Client, type ParseMode } from "@authsvc/oauth2";
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const parse: ParseMode = "json"; // even when the server says text/plain
 * const load = () => client.request("get", "/legacy", { parse });
 * console.log(typeof load);
 * ```
 */
export type ParseMode = "automatic" | "json" | "query" | "text";

/**
 * A body parser (the gem's `register_parser` block or a `parse:` lambda): gets
 * the body text and the raw response; a plain object it returns becomes a
 * `SnakyHash` like a JSON object would.
 *
 * @example
 * ```ts
 * import { OAuthResponse, type Parser } from "@authsvc/oauth2";
 * const csv: Parser = (body) => body.split(",");
 * const res = await OAuthResponse.from(new Response("a,b"), { parse: csv });
 * console.log(res.parsed); // ["a", "b"]
 * ```
 */
export type Parser = (body: string, response: globalThis.Response) => unknown;

/**
 * What `parse` accepts: a built-in mode, the name of a registered parser
 * (`OAuthResponse.registerParser`), a parser function, or `false` (no parsing:
 * `parsed` is null).
 *
 * @example
 * ```ts
 * import { Client, type ParseOption } from "@authsvc/oauth2";
 * const parse: ParseOption = false;
 * const client = new Client("id", "secret", { site: "https://api.example.com" });
 * const load = () => client.request("get", "/raw", { parse });
 * console.log(typeof load);
 * ```
 */
export type ParseOption = ParseMode | string | Parser | false;

/** Registered parsers by name, and the content types that select them automatically. */
const PARSERS = new Map<string, Parser>();
const PARSER_TYPES = new Map<string, string>();

/**
 * Options for parsing a response body.
 *
 * @example
 * ```ts
 * import { OAuthResponse, type ResponseOptions } from "@authsvc/oauth2";
 * const options: ResponseOptions = { snaky: false };
 * const res = await OAuthResponse.from(Response.json({ accessToken: "a" }), options);
 * console.log(res.parsed); // { accessToken: "a" }
 * ```
 */
export interface ResponseOptions {
  /** Default `"automatic"`; see {@linkcode ParseOption}. */
  parse?: ParseOption;
  /** Convert object keys to snake_case and return a `SnakyHash` (default true). */
  snaky?: boolean;
  /** Class used for parsed hashes when `snaky` is on (default `SnakyHash`). */
  snakyHashClass?: typeof SnakyHash;
}

/**
 * What `OAuthResponse.parsed` can hold.
 *
 * @example
 * ```ts
 * import { OAuthResponse, type Parsed, SnakyHash } from "@authsvc/oauth2";
 * const res = await OAuthResponse.from(Response.json({ expiresIn: 60 }));
 * const parsed: Parsed = res.parsed;
 * if (parsed instanceof SnakyHash) console.log(parsed.expires_in); // 60
 * ```
 */
export type Parsed = SnakyHash | Record<string, unknown> | unknown[] | string | null;

const JSON_TYPES = new Set(["application/json", "text/javascript", "application/javascript"]);

/**
 * A response of the provider: status, headers, the body text and its parsed form.
 *
 * @example
 * ```ts
 * import { OAuthResponse, SnakyHash } from "@authsvc/oauth2";
 * const res = await OAuthResponse.from(
 *   new Response("access_token=a&expiresIn=60", { headers: { "content-type": "application/x-www-form-urlencoded" } }),
 * );
 * console.log(res.status, res.contentType); // 200 "application/x-www-form-urlencoded"
 * console.log((res.parsed as SnakyHash).expires_in); // "60"
 * ```
 */
export class OAuthResponse {
  /** HTTP status code. */
  readonly status: number;
  /** Response headers. */
  readonly headers: Headers;
  /** The raw body text. */
  readonly body: string;
  /** The raw fetch `Response` (its body already consumed). */
  readonly response: globalThis.Response;
  /** Parsing options given for this response. */
  readonly options: Readonly<ResponseOptions>;
  /** The error for a status of 400 or above when errors are not raised. */
  error?: OAuthError;
  #parsed?: { value: Parsed };

  /**
   * Creates an instance.
   *
   * @param response the fetch response (its body is not read here)
   * @param body the body text, already read
   * @param options parsing options
   */
  constructor(response: globalThis.Response, body: string, options: ResponseOptions = {}) {
    this.response = response;
    this.status = response.status;
    this.headers = response.headers;
    this.body = body;
    this.options = options;
  }

  /**
   * Registers a parser under `name` (usable as `parse: name`) for the given
   * content types (chosen automatically for them), as the gem's
   * `OAuth2::Response.register_parser`.
   *
   * @throws {TypeError} for a bad name, type list or parser
   */
  static registerParser(name: string, contentTypes: string[], parser: Parser): void {
    if (typeof name !== "string" || name === "") {
      throw new TypeError(`registerParser: "name" must be a non-empty string`);
    }
    if (!Array.isArray(contentTypes) || contentTypes.some((t) => typeof t !== "string")) {
      throw new TypeError(`registerParser: "contentTypes" must be an array of strings`);
    }
    if (typeof parser !== "function") {
      throw new TypeError(`registerParser: "parser" must be a function`);
    }
    PARSERS.set(name, parser);
    for (const t of contentTypes) PARSER_TYPES.set(t.toLowerCase(), name);
  }

  /** Reads the body of `response` and wraps it. */
  static async from(
    response: globalThis.Response,
    options: ResponseOptions = {},
  ): Promise<OAuthResponse> {
    return new OAuthResponse(response, await response.text(), options);
  }

  /** The media type of the body, lower case, without parameters; null when absent. */
  get contentType(): string | null {
    if (this.#contentType === undefined) {
      const raw = this.headers.get("content-type");
      const semi = raw ? raw.indexOf(";") : -1;
      this.#contentType = raw
        ? (semi < 0 ? raw : raw.slice(0, semi)).trim().toLowerCase() || null
        : null;
    }
    return this.#contentType;
  }

  #contentType?: string | null;

  /**
   * The parsed body: form-encoded bodies and JSON objects give a `SnakyHash`
   * (a plain object with `snaky: false`), JSON arrays an array, anything else
   * the body string; an empty body gives null.
   */
  get parsed(): Parsed {
    if (!this.#parsed) {
      const raw = this.#raw();
      let value: Parsed = raw.data;
      if (raw.hash && this.options.snaky !== false) {
        const Klass = this.options.snakyHashClass ?? SnakyHash;
        value = new Klass(raw.data as Record<string, unknown>);
      }
      this.#parsed = { value };
    }
    return this.#parsed.value;
  }

  #rawCache?: { data: Parsed; hash: boolean };

  /** The body parsed once, before any SnakyHash is built. */
  #raw(): { data: Parsed; hash: boolean } {
    const mode = this.options.parse ?? "automatic";
    if (this.#rawCache) return this.#rawCache;
    if (mode === false) return (this.#rawCache = asText(null));
    let parser = typeof mode === "function" ? mode : undefined;
    if (!parser && PARSERS.size > 0) {
      const name = mode === "automatic" && this.contentType
        ? PARSER_TYPES.get(this.contentType)
        : mode;
      parser = typeof name === "string" ? PARSERS.get(name) : undefined;
    }
    if (parser) {
      const data = parser(this.body, this.response);
      const hash = data !== null && typeof data === "object" && !Array.isArray(data) &&
        Object.getPrototypeOf(data) === Object.prototype;
      return (this.#rawCache = { data: data as Parsed, hash });
    }
    return (this.#rawCache = parseBody(
      this.body,
      mode as ParseMode,
      mode === "automatic" ? this.contentType : null,
    ));
  }

  /**
   * The parsed body as a plain object (keys in snake_case unless `snaky` is
   * false) when it is a hash, else null. Cheaper than `parsed` when no
   * SnakyHash is needed.
   */
  get parsedHash(): Record<string, unknown> | null {
    if (this.#parsed) {
      const p = this.#parsed.value;
      if (p instanceof SnakyHash) return p.toObject();
    }
    const raw = this.#raw();
    if (!raw.hash) return null;
    const data = raw.data as Record<string, unknown>;
    return this.options.snaky === false ? { ...data } : snakeKeys(data) as Record<string, unknown>;
  }
}

/** Parses a body by the gem's rules (`hash`: a JSON object or a form); `type` is the media type. */
function parseBody(
  body: string,
  mode: ParseMode,
  type: string | null,
): { data: Parsed; hash: boolean } {
  if (mode === "text") return asText(body);
  if (isBlank(body)) return asText(null);
  let data: unknown;
  const kind = mode !== "automatic"
    ? mode
    : type === "application/x-www-form-urlencoded"
    ? "query"
    : type && (JSON_TYPES.has(type) || type.endsWith("+json"))
    ? "json"
    : /^\s*[[{]/.test(body)
    ? "json"
    : "text";
  if (kind === "text") return asText(body);
  if (kind === "query") {
    data = Object.fromEntries(new URLSearchParams(body.trim()));
  } else {
    try {
      data = JSON.parse(body);
    } catch {
      return asText(body);
    }
  }
  if (Array.isArray(data)) return asText(data);
  if (data === null || typeof data !== "object") return asText(body);
  return { data: data as Record<string, unknown>, hash: true };
}

function asText(data: Parsed): { data: Parsed; hash: boolean } {
  return { data, hash: false };
}

/** Whether `text` is empty or whitespace; a body starting with a visible ASCII character is not copied. */
function isBlank(text: string): boolean {
  const c = text.charCodeAt(0);
  if (c > 32 && c < 127) return false;
  return text.trim() === "";
}

/** A deep copy of `value` with every object key in snake_case. */
function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== "object") return value;
  const source = value as Record<string, unknown>;
  let flat = true;
  for (const k in source) {
    const v = source[k];
    if ((v !== null && typeof v === "object") || snakeCase(k) !== k) {
      flat = false;
      break;
    }
  }
  // The common token response: snake_case keys, no nesting, so a shallow copy does.
  if (flat) return { ...source };
  const out: Record<string, unknown> = {};
  for (const k in value as Record<string, unknown>) {
    const v = (value as Record<string, unknown>)[k];
    out[snakeCase(k)] = v !== null && typeof v === "object" ? snakeKeys(v) : v;
  }
  return out;
}

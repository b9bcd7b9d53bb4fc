/**
 * `OAuthResponse`: a fetched response with its body read and parsed by the
 * rules of the Ruby gem's `OAuth2::Response` (docs/client.md).
 * @module
 */
import { SnakyHash } from "./snaky_hash.ts";
import type { OAuthError } from "./error.ts";
import { mistyped } from "./config.ts";
import { hashOf, mediaType, parseBody, PARSER_TYPES, PARSERS, type Raw } from "./parse.ts";

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
  #raw?: Raw;
  #contentType?: string | null;

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
      throw mistyped("registerParser", "name", "a non-empty string", name);
    }
    if (!Array.isArray(contentTypes) || contentTypes.some((t) => typeof t !== "string")) {
      throw mistyped("registerParser", "contentTypes", "an array of strings", contentTypes);
    }
    if (typeof parser !== "function") {
      throw mistyped("registerParser", "parser", "a function", parser);
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
      this.#contentType = mediaType(this.headers.get("content-type"));
    }
    return this.#contentType;
  }

  /**
   * The parsed body: form-encoded bodies and JSON objects give a `SnakyHash`
   * (a plain object with `snaky: false`), JSON arrays an array, anything else
   * the body string; an empty body gives null.
   */
  get parsed(): Parsed {
    if (!this.#parsed) {
      const raw = this.#raw ??= this.#parse();
      const Klass = this.options.snakyHashClass ?? SnakyHash;
      this.#parsed = {
        value: raw.hash && this.options.snaky !== false
          ? new Klass(raw.data as Record<string, unknown>)
          : raw.data as Parsed,
      };
    }
    return this.#parsed.value;
  }

  /**
   * The parsed body as a plain object of the caller's own (keys in
   * snake_case unless `snaky` is false) when it is a hash, else null.
   * Cheaper than `parsed` when no SnakyHash is needed.
   */
  get parsedHash(): Record<string, unknown> | null {
    const p = this.#parsed?.value;
    if (p instanceof SnakyHash) return p.toObject();
    // A body parsed here for the first time is not kept: the caller may have it as it is.
    const kept = this.#raw;
    const raw = kept ?? this.#parse();
    if (!raw.hash) this.#raw = raw;
    return hashOf(raw, this.options.snaky, !kept);
  }

  #parse(): Raw {
    return parseBody(this.body, this.response, this.options.parse, () => this.contentType);
  }
}

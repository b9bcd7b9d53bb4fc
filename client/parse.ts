/**
 * How a response body is parsed, by the rules of the Ruby gem's
 * `OAuth2::Response` (docs/client.md): the parser registry, the media type,
 * JSON and form bodies, snake_case keys. `OAuthResponse` and the token
 * requests both parse through here.
 * @module
 */
import type { ParseMode, ParseOption, Parser } from "./response.ts";
import { snakeCase } from "./snaky_hash.ts";

/** Registered parsers by name (`OAuthResponse.registerParser`). */
export const PARSERS: Map<string, Parser> = new Map();
/** The parser name registered for each content type. */
export const PARSER_TYPES: Map<string, string> = new Map();

/** Media types by Content-Type header (a provider sends the same few): no parsing per response. */
const MEDIA_TYPES = new Map<string, string | null>();
const JSON_TYPES = new Set(["application/json", "text/javascript", "application/javascript"]);

/** The media type of a `Content-Type` value: lower case, without parameters; null when absent. */
export function mediaType(header: string | null): string | null {
  if (header === null) return null;
  let type = MEDIA_TYPES.get(header);
  if (type === undefined) {
    type = header.split(";", 1)[0].trim().toLowerCase() || null;
    if (MEDIA_TYPES.size < 64) MEDIA_TYPES.set(header, type);
  }
  return type;
}

function typeOf(response: globalThis.Response, type?: () => string | null): string | null {
  return type ? type() : mediaType(response.headers.get("content-type"));
}

/** A parsed body: `hash` for a record (a JSON object, a form); `fresh` when no one else holds it. */
export interface Raw {
  /** What the parser gave. */
  data: unknown;
  /** Whether `data` is a plain record. */
  hash?: boolean;
  /** Whether `data` was made by this parse alone (the caller may keep it as it is). */
  fresh?: boolean;
}

/**
 * Parses `body` by the `parse` option: `false` gives null; a function, a
 * registered parser's name, or the parser registered for the media type
 * runs; else the gem's rules (`automatic` by media type, `json`, `query`,
 * `text`; an unknown name reads JSON).
 *
 * @param type the media type, when the caller has it (else read from `response` when it decides)
 */
export function parseBody(
  body: string,
  response: globalThis.Response,
  parse: ParseOption | undefined,
  type?: () => string | null,
): Raw {
  const mode = parse ?? "automatic";
  if (mode === false) return { data: null };
  let parser = typeof mode === "function" ? mode : undefined;
  if (!parser && PARSERS.size > 0) {
    const name = mode === "automatic" ? PARSER_TYPES.get(typeOf(response, type)!) : mode;
    parser = typeof name === "string" ? PARSERS.get(name) : undefined;
  }
  if (parser) {
    const data = parser(body, response);
    const proto = data !== null && typeof data === "object" && Object.getPrototypeOf(data);
    return { data, hash: proto === Object.prototype && !Array.isArray(data) };
  }
  if (mode === "text") return { data: body };
  // Blank: empty or whitespace (a body starting with a visible ASCII character is not copied).
  const c = body.charCodeAt(0);
  if (!(c > 32 && c < 127) && body.trim() === "") return { data: null };
  const t = mode === "automatic" ? typeOf(response, type) : null;
  const kind = mode !== "automatic"
    ? mode as ParseMode
    : t === "application/x-www-form-urlencoded"
    ? "query"
    : (t && (JSON_TYPES.has(t) || t.endsWith("+json"))) || /^\s*[[{]/.test(body)
    ? "json"
    : "text";
  if (kind === "text") return { data: body };
  let data: unknown;
  if (kind === "query") data = Object.fromEntries(new URLSearchParams(body.trim()));
  else {
    // JSON, and any parser name not registered (as the gem reads an unknown one)
    try {
      data = JSON.parse(body);
    } catch {
      return { data: body };
    }
  }
  if (Array.isArray(data)) return { data };
  if (data === null || typeof data !== "object") return { data: body };
  return { data, hash: true, fresh: true };
}

/**
 * The record of `raw` for the caller to keep (keys in snake_case unless
 * `snaky` is false), or null when it is no record. `own`: the caller may take
 * `raw.data` itself when nothing needs changing.
 */
export function hashOf(
  raw: Raw,
  snaky: boolean | undefined,
  own: boolean,
): Record<string, unknown> | null {
  if (!raw.hash) return null;
  const data = raw.data as Record<string, unknown>;
  if (snaky === false) return own && raw.fresh ? data : { ...data };
  return snakeKeys(data, own && !!raw.fresh) as Record<string, unknown>;
}

/** `value` with every object key in snake_case (a copy, unless `reuse` and nothing changes). */
export function snakeKeys(value: unknown, reuse = false): unknown {
  if (Array.isArray(value)) return value.map((v) => snakeKeys(v));
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
  // The common token response: snake_case keys, no nesting.
  if (flat) return reuse ? source : { ...source };
  const out: Record<string, unknown> = {};
  for (const k in source) out[snakeCase(k)] = snakeKeys(source[k]);
  return out;
}

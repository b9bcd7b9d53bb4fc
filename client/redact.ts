/**
 * The one redaction function. The debug logger, the inspect hooks of `Client`
 * and `AccessToken`, and every error message the library builds go through
 * {@linkcode redact}, so a secret hidden in one place is hidden in all.
 * @module
 */
import { config } from "./config.ts";
import { snakeCase } from "./snaky_hash.ts";
import { formEncodeValue } from "./url.ts";

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;
const FORM_LIKE = /^[^=&\s{}[\]"]+=[^&\s]*(?:&[^=&\s]+(?:=[^&\s]*)?)*$/;
const AUTH_SCHEME = /\b(Bearer|Basic|DPoP|MAC|Digest)\s+[A-Za-z0-9\-._~+/=:,"]+/gi;

/**
 * Keys compare in snake_case: `accessToken`, `Access-Token` and `ACCESS_TOKEN`
 * are all `access_token` (providers send camelCase; header names use dashes).
 */
function isFiltered(key: string, keys: ReadonlySet<string>): boolean {
  return keys.has(snakeCase(key));
}

function filteredKeys(): Set<string> {
  return new Set(config.filteredDebugKeys.map(snakeCase));
}

/** The spellings of a snake_case key that free text may use. */
function spellings(key: string): string[] {
  const camel = key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  return [...new Set([key, key.replaceAll("_", "-"), camel])];
}

/**
 * Returns a copy of `value` with every sensitive value replaced by
 * `config.filteredLabel`:
 * - objects, arrays, `Headers`, `URLSearchParams`: values under a key of
 *   `config.filteredDebugKeys` (any depth; compared in snake_case, so
 *   `accessToken` and `Access-Token` match `access_token`);
 * - strings: a JSON text, a URL (query and fragment parameters, password),
 *   a form-encoded body, or free text (`key=value`, `"key": "value"`,
 *   `Bearer ...`/`Basic ...` credentials and URLs inside it);
 * - in all of them, every literal occurrence of a string in `secrets`.
 *
 * @param value what to redact
 * @param secrets literal values that must never appear (a client secret, tokens)
 * @returns the redacted copy (strings stay strings, objects become plain objects)
 *
 * @example
 * ```ts
 * import { redact } from "@authsvc/oauth2";
 * console.log(redact("grant_type=password&username=ann&password=hunter2"));
 * // "grant_type=password&username=ann&password=[FILTERED]"
 * console.log(redact({ access_token: "abc", scope: "read" })); // { access_token: "[FILTERED]", scope: "read" }
 * ```
 */
export function redact(value: unknown, secrets: readonly (string | undefined)[] = []): unknown {
  return redactWith(value, secrets, { keys: filteredKeys(), label: config.filteredLabel });
}

/** A label and key set fixed at one moment (a client's debug output keeps the one of its creation). */
export interface RedactionFilter {
  keys: ReadonlySet<string>;
  label: string;
}

/** The current configuration as a {@linkcode RedactionFilter}. */
export function currentFilter(): RedactionFilter {
  return { keys: filteredKeys(), label: config.filteredLabel };
}

/** {@linkcode redact} with a given filter instead of the current configuration. */
export function redactWith(
  value: unknown,
  secrets: readonly (string | undefined)[],
  filter: RedactionFilter,
): unknown {
  const { keys, label } = filter;
  const literals = secrets.filter((s): s is string => typeof s === "string" && s.length >= 4)
    .sort((a, b) => b.length - a.length);
  return redactValue(value, keys, label, literals, 0);
}

/** {@linkcode redact} for text: always returns a string. */
export function redactText(text: string, secrets: readonly (string | undefined)[] = []): string {
  return redact(String(text), secrets) as string;
}

function redactValue(
  value: unknown,
  keys: ReadonlySet<string>,
  label: string,
  literals: string[],
  depth: number,
): unknown {
  if (typeof value === "string") return redactString(value, keys, label, literals);
  if (value === null || typeof value !== "object" || depth > 20) return value;
  if (value instanceof Headers || value instanceof URLSearchParams) {
    const out: Record<string, string> = {};
    for (const [k, v] of value) {
      out[k] = isFiltered(k, keys) ? label : redactString(v, keys, label, literals);
    }
    return out;
  }
  if (value instanceof URL) return redactString(value.href, keys, label, literals);
  if (Array.isArray(value)) {
    return value.map((v) => redactValue(v, keys, label, literals, depth + 1));
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    return `[${byteLength(value)} bytes]`;
  }
  const source = typeof (value as { toObject?: unknown }).toObject === "function"
    ? (value as { toObject(): Record<string, unknown> }).toObject()
    : value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(source)) {
    out[k] = isFiltered(k, keys) && v !== undefined && v !== null && v !== ""
      ? label
      : redactValue(v, keys, label, literals, depth + 1);
  }
  return out;
}

function byteLength(value: ArrayBuffer | ArrayBufferView): number {
  return value.byteLength;
}

function redactString(
  text: string,
  keys: ReadonlySet<string>,
  label: string,
  literals: string[],
): string {
  let out = text;
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      out = JSON.stringify(redactValue(JSON.parse(trimmed), keys, label, [], 0));
      return scrubLiterals(out, literals, label);
    } catch {
      // not JSON: treat as free text below
    }
  }
  if (FORM_LIKE.test(trimmed) && !/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    out = redactParams(new URLSearchParams(trimmed), keys, label);
  } else {
    out = out.replace(URL_IN_TEXT, (url) => redactUrl(url, keys, label));
    out = redactFreeText(out, keys, label);
  }
  return scrubLiterals(out, literals, label);
}

function scrubLiterals(text: string, literals: string[], label: string): string {
  let out = text;
  for (const secret of literals) {
    out = out.split(secret).join(label);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.split(encoded).join(label);
    const form = new URLSearchParams({ s: secret }).toString().slice(2);
    if (form !== secret && form !== encoded) out = out.split(form).join(label);
  }
  return out;
}

/**
 * A form or query string with filtered values replaced by the label, written
 * as it is (`[FILTERED]`, not `%5BFILTERED%5D`): the reader of a log looks
 * for the label, and JSON and free text show it unencoded too.
 */
function redactParams(params: URLSearchParams, keys: ReadonlySet<string>, label: string): string {
  let out = "";
  for (const [k, v] of params) {
    out += `${out ? "&" : ""}${formEncodeValue(k)}=${
      isFiltered(k, keys) ? label : formEncodeValue(v)
    }`;
  }
  return out;
}

function redactUrl(raw: string, keys: ReadonlySet<string>, label: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw;
  }
  if (url.password) url.password = label;
  if (url.search) url.search = redactParams(url.searchParams, keys, label);
  if (url.hash.length > 1 && url.hash.includes("=")) {
    url.hash = redactParams(new URLSearchParams(url.hash.slice(1)), keys, label);
  }
  return url.href;
}

function redactFreeText(text: string, keys: ReadonlySet<string>, label: string): string {
  let out = text.replace(AUTH_SCHEME, (_m, scheme: string) => `${scheme} ${label}`);
  if (keys.size === 0) return out;
  const names = [...keys].flatMap(spellings)
    .sort((a, b) => b.length - a.length)
    .map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  // key=value, key: value, "key": "value", 'key'='value' (the key not preceded by a word char)
  const pattern = new RegExp(
    `(^|[^A-Za-z0-9_-])(["']?)(${names})\\2(\\s*[:=]\\s*)(["']?)([^\\s"'&,;}\\]]+)`,
    "gi",
  );
  out = out.replace(
    pattern,
    (
      m: string,
      pre: string,
      q1: string,
      key: string,
      sep: string,
      q2: string,
      value: string,
      offset: number,
      whole: string,
    ) =>
      // already the label (which may hold characters that end a value, as "]" does)
      whole.startsWith(label, offset + m.length - value.length)
        ? m
        : `${pre}${q1}${key}${q1}${sep}${q2}${label}`,
  );
  return out;
}

/** URL resolution rules (docs/client.md, "A client and its endpoints") and query helpers. @module */

const ABSOLUTE = /^[a-z][a-z0-9+.-]*:/i;

/**
 * Resolves `path` against `site`: absolute URLs as given, a leading `/` on the
 * host of `site`, anything else under the path of `site`.
 *
 * @throws {TypeError} when `path` is relative and there is no valid `site`
 */
export function resolveUrl(site: string | undefined, path: string, what = "url"): URL {
  if (ABSOLUTE.test(path)) {
    try {
      return new URL(path);
    } catch {
      throw new TypeError(`"${what}" is not a valid URL: "${path}"`);
    }
  }
  if (!site) {
    throw new TypeError(`"${what}" is relative ("${path}") and the client has no "site"`);
  }
  const base = new URL(site);
  let url: URL;
  if (path.startsWith("/") && base.origin !== "null") {
    // Rule 2 taken literally: "//evil.example/x" is a path on the site's host, not
    // a scheme-relative URL, so a path can never move the request to another host.
    url = new URL(base.origin + path);
  } else {
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    base.search = "";
    base.hash = "";
    url = new URL(path, base);
  }
  // What the URL parser reads as another host ("\\evil.example", " https://...") is no
  // relative path: say so rather than send the request (and its token) elsewhere.
  if (url.origin !== base.origin) {
    throw new TypeError(
      `"${what}" ("${path}") is not a path on the site's host (${base.origin}); ` +
        `pass an absolute URL to reach another host`,
    );
  }
  return url;
}

/** A query or form value as the library accepts it. */
export type ParamValue = string | number | boolean | string[] | null | undefined;

/** Appends `params` to `target` (arrays repeat the key; null and undefined are skipped). */
export function appendParams(target: URLSearchParams, params: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) {
      for (const item of v) target.append(k, String(item));
    } else if (typeof v === "object") {
      target.append(k, JSON.stringify(v));
    } else {
      target.append(k, String(v));
    }
  }
}

/** `url` with `params` added to its query. */
export function withQuery(url: URL, params: Record<string, unknown> | undefined): string {
  if (params && Object.keys(params).length > 0) {
    appendParams(url.searchParams, params);
    spacesAsPercent20(url);
  }
  return url.href;
}

/**
 * Writes spaces in the query as `%20` rather than `+` (as the gem's Faraday
 * does): a literal `+` is already `%2B` there, and some providers read `+`
 * as a plus sign.
 */
export function spacesAsPercent20(url: URL): void {
  const search = url.search;
  if (search.includes("+")) url.search = search.replaceAll("+", "%20");
}

/** `application/x-www-form-urlencoded` serialization, as URLSearchParams writes it. */
export function formEncodeValue(value: string): string {
  if (isFormSafe(value)) return value;
  let out = encodeURIComponent(value);
  if (out.includes("%20")) out = out.replaceAll("%20", "+");
  if (NEEDS_EXTRA.test(out)) {
    out = out.replace(NEEDS_EXTRA_G, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  }
  return out;
}

/** Whether `value` is only `A-Z a-z 0-9 * - . _` (a loop: cheaper than a regex on short values). */
function isFormSafe(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (
      !((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) ||
        c === 95 || c === 45 || c === 46 || c === 42)
    ) return false;
  }
  return true;
}
const NEEDS_EXTRA = /[!'()~]/;
const NEEDS_EXTRA_G = /[!'()~]/g;

/** A form body from a record (arrays repeat the key; null and undefined are skipped). */
export function formBody(params: Record<string, unknown>): string {
  let out = "";
  for (const k in params) {
    const v = params[k];
    if (v === undefined || v === null) continue;
    const key = formEncodeValue(k);
    const values = Array.isArray(v) ? v : [v];
    for (const item of values) {
      const text = typeof item === "object" && item !== null ? JSON.stringify(item) : String(item);
      out += `${out ? "&" : ""}${key}=${formEncodeValue(text)}`;
    }
  }
  return out;
}

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

const HEX = "0123456789ABCDEF";

/**
 * `application/x-www-form-urlencoded` serialization, as URLSearchParams
 * writes it: `A-Z a-z 0-9 * - . _` as they are, a space as `+`, any other
 * byte of the UTF-8 encoding as `%XX`. ASCII is done here, without a
 * regular expression or `encodeURIComponent` (a token request's values are
 * ASCII: this runs on every one).
 */
export function formEncodeValue(value: string): string {
  let out = "";
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (
      (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) ||
      c === 95 || c === 45 || c === 46 || c === 42
    ) continue;
    if (c > 127) {
      return encodeURIComponent(value).replace(
        /%20|[!'()~]/g,
        (m) => m === "%20" ? "+" : `%${HEX[m.charCodeAt(0) >> 4]}${HEX[m.charCodeAt(0) & 15]}`,
      );
    }
    out += value.slice(from, i) + (c === 32 ? "+" : `%${HEX[c >> 4]}${HEX[c & 15]}`);
    from = i + 1;
  }
  return from === 0 ? value : out + value.slice(from);
}

/**
 * A form body from a record (arrays repeat the key; null and undefined are
 * skipped, and so are the keys in `skip`).
 */
export function formBody(params: Record<string, unknown>, skip?: ReadonlySet<string>): string {
  let out = "";
  for (const k in params) {
    const v = params[k];
    if (v === undefined || v === null || skip?.has(k)) continue;
    const key = formEncodeValue(k);
    if (Array.isArray(v)) { for (const item of v) out += `${out && "&"}${key}=${formValue(item)}`; }
    else out += `${out && "&"}${key}=${formValue(v)}`;
  }
  return out;
}

function formValue(item: unknown): string {
  return formEncodeValue(
    typeof item === "string"
      ? item
      : typeof item === "object" && item
      ? JSON.stringify(item)
      : String(item),
  );
}

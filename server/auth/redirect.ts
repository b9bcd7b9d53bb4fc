/**
 * Where the server may send a browser: `redirect_to` is honoured only when it
 * is an absolute http(s) URL on SITE_URL's host (host and port), or when it
 * matches an entry of URI_ALLOW_LIST; otherwise SITE_URL is used
 * (docs/server/email.md, "Limits and safety"). When SITE_URL is https, its
 * host is matched over https only: an `http:` page there would receive the
 * session in plain text (an allow-list entry written with `http://` is the
 * operator's explicit choice and counts).
 *
 * URLs are parsed (WHATWG URL), never compared as string prefixes. Refused
 * outright: anything that does not parse as an absolute URL (`//evil`,
 * `/path`), userinfo (`https://site@evil`), backslashes, whitespace and
 * control characters, and the `javascript:`, `data:`, `vbscript:` and
 * `file:` schemes.
 *
 * Allow-list entries are URL patterns compared part by part:
 * - scheme: equal (custom app schemes like `myapp://callback` work);
 * - host: `*` stands for one DNS label or part of one (`https://*.example.com`
 *   matches `https://a.example.com`, not `https://a.b.example.com` nor
 *   `https://example.com`), `**` for any run of labels; the port must be equal;
 * - path: `*` stands for characters up to the next `/`, `**` for anything
 *   (`https://app.example.com/**`); a pattern without a path matches `/` only.
 * The candidate's query and fragment are not compared.
 *
 *   verifyRedirectTo(config, "https://app.example.com/welcome") // the URL, or SITE_URL
 */
import type { Config } from "../config/mod.ts";

const FORBIDDEN_SCHEMES = new Set(["javascript:", "data:", "vbscript:", "file:", "blob:"]);

function parseCandidate(raw: string): URL | null {
  // deno-lint-ignore no-control-regex
  if (!raw || raw.length > 2048 || /[\\\s\x00-\x1f\x7f]/.test(raw)) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if (FORBIDDEN_SCHEMES.has(u.protocol)) return null;
  // userinfo, also where a non-special scheme keeps it from the parser
  if (u.username || u.password || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(raw)) return null;
  return u;
}

function escapeRe(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

function globRe(glob: string, single: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === "*" && glob[i + 1] === "*") {
      re += ".*";
      i++;
    } else if (glob[i] === "*") re += `${single}*`;
    else re += escapeRe(glob[i]);
  }
  return new RegExp(`^${re}$`);
}

interface Pattern {
  scheme: string;
  host: RegExp;
  port: string;
  path: RegExp;
}

const patternCache = new WeakMap<readonly string[], Pattern[]>();

function compile(entry: string): Pattern | null {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)/i.exec(entry.trim());
  if (!m) return null;
  const scheme = m[1].toLowerCase() + ":";
  const hostPort = m[2].toLowerCase();
  const pm = /^(.*?)(?::(\d+|\*))?$/.exec(hostPort)!;
  const defaultPort = scheme === "https:" ? "443" : scheme === "http:" ? "80" : "";
  const port = pm[2] === undefined || pm[2] === defaultPort ? "" : pm[2];
  // A host ending in `**` with no path (`com.example.app://**`) matches any
  // path too, as GoTrue's whole-URL glob does.
  const path = m[3] === "" ? (pm[1].endsWith("**") ? "/**" : "/") : m[3];
  return {
    scheme,
    host: globRe(pm[1], "[a-z0-9_-]"),
    port,
    path: globRe(path, "[^/]"),
  };
}

function patterns(list: readonly string[]): Pattern[] {
  let p = patternCache.get(list);
  if (!p) {
    p = list.map(compile).filter((x): x is Pattern => x !== null);
    patternCache.set(list, p);
  }
  return p;
}

/** True when `raw` is a permitted redirect destination. */
export function isRedirectAllowed(config: Pick<Config, "siteUrl" | "uriAllowList">, raw: string) {
  const u = parseCandidate(raw);
  if (!u) return false;
  try {
    const site = new URL(config.siteUrl);
    const scheme = site.protocol === "https:"
      ? u.protocol === "https:" // never downgrade to plain text
      : u.protocol === "http:" || u.protocol === "https:";
    if (scheme && u.host === site.host) return true;
  } catch { /* SITE_URL is validated at start */ }
  const hostname = u.hostname.toLowerCase();
  const path = u.pathname === "" ? "/" : u.pathname;
  for (const p of patterns(config.uriAllowList)) {
    if (p.scheme !== u.protocol) continue;
    if (p.port !== "*" && p.port !== u.port) continue;
    if (!p.host.test(hostname)) continue;
    if (p.path.test(path)) return true;
  }
  return false;
}

/** `raw` when it is a permitted redirect destination, SITE_URL otherwise (or when absent). */
export function verifyRedirectTo(
  config: Pick<Config, "siteUrl" | "uriAllowList">,
  raw: string | undefined | null,
): string {
  if (raw && isRedirectAllowed(config, raw)) return raw;
  return config.siteUrl;
}

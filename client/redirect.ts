/**
 * The next hop of a redirect (docs/client.md, "Redirects and credentials"):
 * `maxRedirects`, 302/303 becoming GET, and the rule that credentials never
 * follow a redirect to another origin. Loaded by the transport when a
 * redirect arrives.
 * @module
 */
import { OAuthError } from "./error.ts";
import { OAuthResponse } from "./response.ts";

/** The request as it will be sent on the next hop (changed in place). */
export interface Hop {
  /** The URL of this hop. */
  url: string;
  /** The HTTP method. */
  method: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The encoded body. */
  body: BodyInit | undefined;
  /** Redirects that may still be followed. */
  left: number;
}

/**
 * Whether a query string or a form body carries one of `secrets` as a value;
 * any other text (JSON ...) counts when it contains a secret of 8 or more
 * characters (shorter ones would match by chance).
 */
function holdsSecret(text: string, secrets: readonly (string | undefined)[]): boolean {
  const values = new Set(new URLSearchParams(text).values());
  return secrets.some((s) => s && (values.has(s) || (s.length >= 8 && text.includes(s))));
}

/**
 * Moves `hop` to the location of the redirect `response`.
 *
 * @param hop the request, changed in place for the next hop
 * @param response the redirect (status 301, 302, 303, 307 or 308)
 * @param text its body
 * @param credentialBody whether the body is a credential (token and revocation requests, a token in the body)
 * @param isCredential whether a header name (lower case) is a credential
 * @param secrets values that must not travel to another origin, and are redacted
 * @returns whether the redirect itself is the answer (no redirect may be followed any more, as
 *   the Ruby gem does)
 * @throws {OAuthError} `redirect_without_location`, or `cross_origin_redirect` when a
 *   credential that cannot be removed would go to another origin
 */
export function nextHop(
  hop: Hop,
  response: globalThis.Response,
  text: string,
  credentialBody: boolean,
  isCredential: (name: string) => boolean,
  secrets: readonly (string | undefined)[],
): boolean {
  if (hop.left <= 0) return true;
  const status = response.status;
  const location = response.headers.get("location");
  const refuse = (code: string, description: string) =>
    new OAuthError(new OAuthResponse(response, text), { code, description, secrets });
  if (!location) {
    throw refuse(
      "redirect_without_location",
      `Got ${status} status code, but no Location header was present`,
    );
  }
  hop.left--;
  const from = new URL(hop.url);
  const next = new URL(location, from);
  if ((status === 302 || status === 303) && hop.method !== "HEAD") {
    hop.method = "GET";
    hop.body = undefined;
    delete hop.headers["content-type"];
  }
  if (next.origin !== from.origin) {
    // Headers are removed (the request stays meaningful without them, as fetch does for
    // Authorization); a credential in a body the redirect resends, or in the new query, cannot be.
    const body = hop.body;
    const resent = body !== undefined && hop.method !== "GET" && hop.method !== "HEAD";
    const where =
      resent && (credentialBody || (typeof body === "string" && holdsSecret(body, secrets)))
        ? "would resend the request body (which carries a credential) there"
        : next.search && holdsSecret(next.search, secrets)
        ? "with a credential in the query of the new location"
        : "";
    if (where) {
      throw refuse(
        "cross_origin_redirect",
        `the endpoint redirected to another origin (${next.origin}) with status ${status}, which ${where}`,
      );
    }
    for (const k in hop.headers) if (isCredential(k)) delete hop.headers[k];
  }
  hop.url = next.href;
  return false;
}

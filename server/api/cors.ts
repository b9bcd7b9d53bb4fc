/**
 * CORS for every route: any origin may call the API with credentials (the
 * browser clients of GoTrue send the anon key and a bearer token from other
 * origins), as GoTrue answers; requests without an Origin header (servers,
 * curl) get only `Vary: Origin`. The road (api/road.ts) puts the headers on
 * every answer with `withCors`, the one place they are written; an OPTIONS
 * preflight to any path is answered by `preflight` (and then `withCors`).
 * Paths under /console/ get none when the console is enabled: its API answers
 * only pages of its own origin, so no other origin, not even a sibling
 * subdomain the browser sends the console's cookies from, may read an answer.
 */

/** The headers a cross-origin caller may read. */
export const EXPOSE = "X-Total-Count,Link,X-Request-Id,Retry-After";

const ALLOW_HEADERS = "Authorization,Content-Type,X-Client-Info,X-Supabase-Api-Version,apikey";
const ALLOW_METHODS = "GET,POST,PUT,PATCH,DELETE,OPTIONS";

/** The operators' console's paths, which get no CORS headers (console/routes.ts). */
export function isConsolePath(path: string): boolean {
  return path === "/console" || path.startsWith("/console/");
}

/**
 * `headers` with the CORS headers of an answer to a request from `origin`
 * (null: not a CORS request, only `Vary: Origin`). Written into `headers` in
 * place, which must be mutable.
 */
export function withCors(headers: Headers, origin: string | null): void {
  if (origin) {
    headers.set("access-control-allow-origin", origin);
    headers.set("access-control-allow-credentials", "true");
    headers.set("access-control-expose-headers", EXPOSE);
  }
  const vary = headers.get("vary");
  if (vary === null) headers.set("vary", "Origin");
  else if (!/(^|,)\s*origin\s*(,|$)/i.test(vary)) headers.append("vary", "Origin");
}

/**
 * The answer to a preflight (OPTIONS): 204 with the methods and request
 * headers the API accepts, cached by the browser for 10 minutes; `withCors`
 * adds the origin's headers as to any answer.
 */
export function preflight(): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-methods": ALLOW_METHODS,
      "access-control-allow-headers": ALLOW_HEADERS,
      "access-control-max-age": "600",
      vary: "Access-Control-Request-Headers",
    },
  });
}

/**
 * CORS for every route: any origin may call the API with credentials (the
 * browser clients of GoTrue send the anon key and a bearer token from other
 * origins), as GoTrue answers; requests without an Origin header (servers,
 * curl) get only `Vary: Origin`.
 *
 * Preflights (OPTIONS) are answered by hono's cors middleware. On every other
 * request the headers are set BEFORE the handler runs, into the headers the
 * handler's response is built with: setting them afterwards (what hono's
 * middleware does) builds a placeholder Response per request and copies the
 * final one again, a noticeable share of the CPU of a small answer such as
 * `GET /user`'s. A handler that returns a Response of its own (a
 * redirect, an error answer) gets them added afterwards.
 */
import { cors } from "hono/cors";
import type { MiddlewareHandler } from "../../deps.ts";
import type { AppEnv } from "./context.ts";
import { setHeaderAfter } from "./headers.ts";

/** The headers a cross-origin caller may read. */
export const EXPOSE = "X-Total-Count,Link,X-Request-Id,Retry-After";

/** The operators' console's paths, which get no CORS headers (console/routes.ts). */
export function isConsolePath(path: string): boolean {
  return path === "/console" || path.startsWith("/console/");
}

/**
 * The CORS middleware of the API. With `exceptConsole` (the console is
 * enabled), paths under /console/ get none: its API answers only pages of
 * its own origin, so no other origin, not even a sibling subdomain the
 * browser sends the console's cookies from, may read an answer.
 */
export function apiCors(opts: { exceptConsole?: boolean } = {}): MiddlewareHandler<AppEnv> {
  const preflight = cors({
    origin: (origin) => origin || "*",
    allowHeaders: [
      "Authorization",
      "Content-Type",
      "X-Client-Info",
      "X-Supabase-Api-Version",
      "apikey",
    ],
    allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    exposeHeaders: EXPOSE.split(","),
    credentials: true,
    maxAge: 600,
  });
  // Responses built by hono (c.json, c.redirect, ...) carry the headers set before next();
  // only a Response a handler made itself lacks them, and then lacks all of them. A request
  // without an Origin header is not a CORS request: it gets only `Vary: Origin` (its answer
  // differs from one to a request with an Origin), as GoTrue's rs/cors answers.
  const exceptConsole = opts.exceptConsole === true;
  return async (c, next) => {
    if (exceptConsole && isConsolePath(c.req.path)) return await next();
    if (c.req.method === "OPTIONS") return await preflight(c, next);
    const origin = c.req.header("origin");
    if (origin) {
      c.header("Access-Control-Allow-Origin", origin);
      c.header("Access-Control-Allow-Credentials", "true");
      c.header("Access-Control-Expose-Headers", EXPOSE);
    }
    c.header("Vary", "Origin");
    await next();
    if (c.res.headers.get("vary") === null) {
      setHeaderAfter(
        c,
        origin
          ? {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Credentials": "true",
            "Access-Control-Expose-Headers": EXPOSE,
          }
          : {},
        { Vary: "Origin" },
      );
    }
  };
}

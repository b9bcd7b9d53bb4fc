/**
 * Two requests answered without hono's routing and middleware, because they
 * size a deployment: `POST /token?grant_type=refresh_token`, which every
 * signed-in client sends every hour, and `GET /user`, which applications send
 * on every page load: together most of a busy server's requests, so each step
 * saved on them counts. The answers are the route table's, header for header and byte for
 * byte (tests/server/core/lanes_test.ts sends the same requests through both),
 * because a lane does the same steps in the same order, with the same
 * functions:
 *
 * 1. the request observer's part: the request id (inherited from
 *    REQUEST_ID_HEADER when valid) as `X-Request-Id`, the request's async
 *    context (log lines and database deadlines);
 * 2. CORS: `Vary: Origin`, and with an Origin header the allow-origin,
 *    credentials and expose headers;
 * 3. the route's own steps ({@link LaneRoute}): for the refresh grant the
 *    body-size limit (from Content-Length), the query check, the row's
 *    `limit("token")` (its captcha applies to the password grant only), the
 *    body as readBody parses it and the grant; for GET /user the query check,
 *    the row's `jwt` guard and the handler's own code (api/user_profile.ts).
 *
 * Errors get the app's error answer (`answerError`, app.ts) with the same
 * headers added. Only requests a lane can answer alike take it (`laneOf`);
 * everything else, HEAD /user included, goes to hono. Servers with tracing,
 * metrics or the console do not use the lanes (those observers live in the
 * middleware); the access log line of LOG_LEVEL info is written here as the
 * observer writes it.
 */
import type { Services } from "../services.ts";
import { tokenSetJson } from "../auth/sessions.ts";
import { RequestDbScope, requestIdOf } from "../observe/request.ts";
import { requestStore } from "../observe/log.ts";
import { resolveClientIp } from "../security/client_ip.ts";
import { rateKeyOf } from "../security/middleware.ts";
import { overRequestRateLimit } from "../security/rate_limit.ts";
import { bearerOf, verifiedClaimsOf } from "./context.ts";
import { EXPOSE } from "./cors.ts";
import { bodyOf, bodyReadFailure, checkQuery } from "./input.ts";
import { refreshTokenSet } from "./token.ts";
import { userProfileText } from "./user_profile.ts";

/** The requests that have a lane. */
export type LaneName = "refresh" | "user";

/**
 * The lane that answers `req` exactly as the route table would, or null:
 * `refresh` for POST, the path exactly `/token`, `grant_type=refresh_token`
 * in the query, a Content-Length and no Transfer-Encoding (a chunked body is
 * counted by hono's body limit); `user` for GET with the path exactly `/user`
 * (any query).
 */
export function laneOf(req: Request): LaneName | null {
  const method = req.method;
  if (method !== "GET" && method !== "POST") return null;
  const url = req.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return null;
  if (method === "GET") {
    if (!url.startsWith("/user", start)) return null;
    const end = start + 5;
    if (url.length === end) return "user";
    return url.charCodeAt(end) === 63 /* ? */ && !url.includes("#", end) ? "user" : null;
  }
  if (!url.startsWith("/token?", start)) return null;
  const query = url.slice(start + 7);
  if (query.includes("#")) return null;
  if (new URLSearchParams(query).get("grant_type") !== "refresh_token") return null;
  const h = req.headers;
  return h.has("content-length") && !h.has("transfer-encoding") ? "refresh" : null;
}

/** What the lanes need of the app. */
export interface LaneOptions {
  /** The app's error answer (app.ts): status, body and the headers of the error itself. */
  answerError(err: unknown, requestId: string, route: string): Response;
  /** The body-size limit's error (app.ts). */
  tooLarge(): never;
}

/** One route's own steps: the JSON text of its 200 answer, or a throw answered as an error. */
interface LaneRoute {
  /** The method and route of the access log line. */
  method: string;
  route: string;
  answer(req: Request, remoteAddr: string): Promise<string>;
}

/** The lanes of one server: `answer` takes a request for which laneOf gave `lane`. */
export function apiLanes(
  s: Services,
  opts: LaneOptions,
): (lane: LaneName, req: Request, remoteAddr: string) => Promise<Response> {
  const config = s.config;
  const maxBody = config.api.maxBodyBytes;
  const refresh = laneFor(s, opts, {
    method: "POST",
    route: "/token",
    async answer(req, remoteAddr) {
      const headers = req.headers;
      if (parseInt(headers.get("content-length") || "0", 10) > maxBody) opts.tooLarge();
      checkQuery(req.url);
      const ip = resolveClientIp(config, headers, remoteAddr);
      const hit = await s.limiter.hit("token", rateKeyOf(s, headers, ip));
      if (!hit.allowed) throw overRequestRateLimit(hit.retryAfterSec);
      const body = bodyOf(headers.get("content-type") ?? "", new Uint8Array(await readBytes(req)));
      return tokenSetJson(await refreshTokenSet(body, s, ip));
    },
  });
  const user = laneFor(s, opts, {
    method: "GET",
    route: "/user",
    async answer(req) {
      checkQuery(req.url);
      const claims = await verifiedClaimsOf(s, bearerOf(req.headers.get("authorization")));
      return await userProfileText(s, claims);
    },
  });
  return (lane, req, remoteAddr) =>
    lane === "user" ? user(req, remoteAddr) : refresh(req, remoteAddr);
}

/** The steps every lane shares around a route's own (see the module's comment). */
function laneFor(
  s: Services,
  opts: LaneOptions,
  route: LaneRoute,
): (req: Request, remoteAddr: string) => Promise<Response> {
  const config = s.config;
  const log = s.log;
  const maxMs = config.api.maxRequestDurationMs;
  const idHeader = config.api.requestIdHeader;
  const accessLog = log.enabled("info");
  const answer = async (req: Request, remoteAddr: string, started: number) => {
    const headers = req.headers;
    const requestId = requestIdOf(idHeader ? headers.get(idHeader)?.trim() : undefined);
    const origin = headers.get("origin");
    const dbScope = new RequestDbScope(
      maxMs > 0 ? started + maxMs : Infinity,
      req,
      log,
      requestId,
    );
    try {
      return await requestStore.run({ requestId, dbScope }, async () => {
        let res: Response;
        try {
          const text = await route.answer(req, remoteAddr);
          // A record, not a Headers object: the Response copies it in one pass.
          const out: Record<string, string> = origin
            ? {
              "x-request-id": requestId,
              "access-control-allow-origin": origin,
              "access-control-allow-credentials": "true",
              "access-control-expose-headers": EXPOSE,
              vary: "Origin",
              "content-type": "application/json",
            }
            : { "x-request-id": requestId, vary: "Origin", "content-type": "application/json" };
          return new Response(text, { status: 200, headers: out });
        } catch (e) {
          res = opts.answerError(e, requestId, route.route);
        }
        // As the middleware adds them to an answer the handler did not build with them.
        const h = res.headers;
        if (origin) {
          h.set("access-control-allow-origin", origin);
          h.set("access-control-allow-credentials", "true");
          h.set("access-control-expose-headers", EXPOSE);
        }
        h.append("vary", "Origin");
        if (h.get("x-request-id") !== requestId) h.set("x-request-id", requestId);
        return res;
      });
    } finally {
      dbScope.answered();
    }
  };
  return async (req, remoteAddr) => {
    const started = performance.now();
    const res = await answer(req, remoteAddr, started);
    if (accessLog) {
      // The request observer's access log line (observe/request.ts), with the request id.
      requestStore.run(
        { requestId: res.headers.get("x-request-id") ?? "" },
        () =>
          log.info("request", {
            method: route.method,
            route: route.route,
            status: res.status,
            duration_ms: Math.round((performance.now() - started) * 100) / 100,
            remote_addr: resolveClientIp(config, req.headers, remoteAddr),
          }),
      );
    }
    return res;
  };
}

/** The body's bytes; a body that cannot be read fails as readBody's does. */
async function readBytes(req: Request): Promise<ArrayBuffer> {
  try {
    return await req.arrayBuffer();
  } catch (e) {
    throw bodyReadFailure(e);
  }
}

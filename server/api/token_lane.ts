/**
 * `POST /token?grant_type=refresh_token` without hono's routing and
 * middleware: the request every signed-in client sends every hour, so the one
 * that sizes a deployment (bench/README.md, "Refresh grant"). The answers are
 * the route table's, header for header and byte for byte
 * (tests/server/core/token_lane_test.ts sends the same requests through both),
 * because this does the same steps in the same order, with the same
 * functions:
 *
 * 1. the request observer's part: the request id (inherited from
 *    REQUEST_ID_HEADER when valid) as `X-Request-Id`, the client IP, the
 *    request's async context (log lines and database deadlines);
 * 2. CORS: `Vary: Origin`, and with an Origin header the allow-origin,
 *    credentials and expose headers;
 * 3. the body-size limit (from Content-Length) and the query check;
 * 4. the row's `limit("token")`; its captcha applies to the password grant only;
 * 5. the handler: the body as readBody parses it, then the refresh grant.
 *
 * Errors get the app's error answer (`answerError`, app.ts) with the same
 * headers added. Only requests this can answer alike take it (`takesLane`):
 * POST, the path exactly `/token`, `grant_type=refresh_token` in the query, a
 * Content-Length and no Transfer-Encoding. Servers with tracing, metrics
 * or the console do not use it (those observers live in the middleware; the access
 * log line of LOG_LEVEL info is written here as the observer writes it); everything else goes
 * to hono.
 */
import type { Services } from "../services.ts";
import { tokenSetJson } from "../auth/sessions.ts";
import { RequestDbScope, requestIdOf } from "../observe/request.ts";
import { requestStore } from "../observe/log.ts";
import { resolveClientIp } from "../security/client_ip.ts";
import { rateKeyOf } from "../security/middleware.ts";
import { overRequestRateLimit } from "../security/rate_limit.ts";
import { EXPOSE } from "./cors.ts";
import { ApiError } from "./errors.ts";
import { bodyOf, checkQuery } from "./input.ts";
import { refreshTokenSet } from "./token.ts";

/** Whether `req` is one the lane answers exactly as the route table would. */
export function takesLane(req: Request): boolean {
  if (req.method !== "POST") return false;
  const url = req.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0 || !url.startsWith("/token?", start)) return false;
  const query = url.slice(start + 7);
  if (query.includes("#")) return false;
  if (new URLSearchParams(query).get("grant_type") !== "refresh_token") return false;
  const h = req.headers;
  return h.has("content-length") && !h.has("transfer-encoding");
}

/** What the lane needs of the app. */
export interface LaneOptions {
  /** The app's error answer (app.ts): status, body and the headers of the error itself. */
  answerError(err: unknown, requestId: string, route: string): Response;
  /** The body-size limit's error (app.ts). */
  tooLarge(): never;
}

/** The lane of one server: answers a request for which takesLane is true. */
export function refreshLane(
  s: Services,
  opts: LaneOptions,
): (req: Request, remoteAddr: string) => Promise<Response> {
  const config = s.config;
  const log = s.log;
  const maxBody = config.api.maxBodyBytes;
  const maxMs = config.api.maxRequestDurationMs;
  const idHeader = config.api.requestIdHeader;
  const accessLog = log.enabled("info");
  const answer = async (req: Request, remoteAddr: string, started: number) => {
    const headers = req.headers;
    const requestId = requestIdOf(idHeader ? headers.get(idHeader)?.trim() : undefined);
    const ip = resolveClientIp(config, headers, remoteAddr);
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
          if (parseInt(headers.get("content-length") || "0", 10) > maxBody) opts.tooLarge();
          checkQuery(req.url);
          const hit = await s.limiter.hit("token", rateKeyOf(s, headers, ip));
          if (!hit.allowed) throw overRequestRateLimit(hit.retryAfterSec);
          const body = bodyOf(
            headers.get("content-type") ?? "",
            new Uint8Array(await readBytes(req)),
          );
          const set = await refreshTokenSet(body, s, ip);
          const out = new Headers({ "x-request-id": requestId });
          if (origin) corsHeaders(out, origin);
          out.set("vary", "Origin");
          out.set("content-type", "application/json");
          return new Response(tokenSetJson(set), { status: 200, headers: out });
        } catch (e) {
          res = opts.answerError(e, requestId, "/token");
        }
        // As the middleware adds them to an answer the handler did not build with them.
        if (origin) corsHeaders(res.headers, origin);
        res.headers.append("vary", "Origin");
        if (res.headers.get("x-request-id") !== requestId) {
          res.headers.set("x-request-id", requestId);
        }
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
            method: "POST",
            route: "/token",
            status: res.status,
            duration_ms: Math.round((performance.now() - started) * 100) / 100,
            remote_addr: resolveClientIp(config, req.headers, remoteAddr),
          }),
      );
    }
    return res;
  };
}

function corsHeaders(h: Headers, origin: string): void {
  h.set("access-control-allow-origin", origin);
  h.set("access-control-allow-credentials", "true");
  h.set("access-control-expose-headers", EXPOSE);
}

/** The body's bytes; a body that cannot be read is readBody's 400. */
async function readBytes(req: Request): Promise<ArrayBuffer> {
  try {
    return await req.arrayBuffer();
  } catch {
    throw new ApiError(400, "bad_json", "Request body is not valid UTF-8");
  }
}

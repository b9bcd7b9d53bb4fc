/**
 * The first middleware of every request: request id (generated, or inherited
 * from REQUEST_ID_HEADER) echoed as `X-Request-Id`, the client IP, the
 * request's async context (so every log line of the request carries its
 * request id, and every database query its deadline), its span, its metrics,
 * and one access log line with method,
 * parametrised route, status and duration. Never the query string: it may
 * carry tokens.
 */
import type { MiddlewareHandler } from "../../deps.ts";
import { matchedRoutes } from "hono/route";
import type { AppEnv, Ctx } from "../api/context.ts";
import type { Services } from "../services.ts";
import { setHeaderAfter } from "../api/headers.ts";
import { resolveClientIp } from "../security/client_ip.ts";
import { type RequestStore, requestStore } from "./log.ts";
import type { Observability } from "./observability.ts";
import { SpanStatusCode } from "../../deps.ts";
import type { QueryScope } from "../db/pg/connection.ts";
import type { Logger } from "./log.ts";

/**
 * What the database queries of one request follow (db/pg/pool.ts): its deadline
 * (API_MAX_REQUEST_DURATION), and whether its client is still there. The request's signal is
 * looked at only for a query that has waited a while: making it costs Deno more than the rest of
 * a fast request. Once the answer is out, work the request left running is no longer bounded.
 */
export class RequestDbScope implements QueryScope {
  deadline: number;
  #signal: AbortSignal | undefined;
  #answered = false;

  constructor(
    deadline: number,
    readonly request: Request,
    readonly log: Logger,
    readonly requestId: string,
  ) {
    this.deadline = deadline;
  }

  gone(): boolean {
    if (this.#answered) return false;
    if (this.#signal === undefined) {
      this.#signal = this.request.signal;
      this.log.debug("request waiting on the database", { request_id: this.requestId });
    }
    return this.#signal.aborted;
  }

  answered(): void {
    this.#answered = true;
    this.deadline = Infinity;
  }
}

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

/** The request id: `inherited` (REQUEST_ID_HEADER's value) when it is one, else a new UUID. */
export function requestIdOf(inherited: string | undefined): string {
  return inherited && REQUEST_ID.test(inherited) ? inherited : crypto.randomUUID();
}

const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
  "CONNECT",
  "TRACE",
]);

/**
 * The method as metrics, spans and the access log name it: a method HTTP defines, or `_OTHER`
 * (OpenTelemetry's HTTP conventions). A client may send any token as the method, and each
 * distinct one would otherwise be a new label set the metrics keep for the life of the process.
 */
export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "_OTHER";
}

/** Hono's `/admin/users/:user_id` (or `:id{[0-9]+}`) as `/admin/users/{user_id}`. */
export function otelRoute(honoPath: string): string {
  return honoPath.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?\??/g, "{$1}");
}

/** The parametrised route that answers this request (`/admin/users/{user_id}`), or "". */
export function routeOf(c: Ctx): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const r = routes[i];
    if (r.method !== "ALL" && r.path !== "*" && r.path !== "/*") return otelRoute(r.path);
  }
  return "";
}

/** Builds the request observer of one server. */
export function requestObserver(s: Services, obs: Observability): MiddlewareHandler<AppEnv> {
  const config = s.config;
  const log = s.log;
  return async (c, next) => {
    const started = performance.now();
    const inherited = config.api.requestIdHeader
      ? c.req.header(config.api.requestIdHeader)?.trim()
      : undefined;
    const requestId = requestIdOf(inherited);
    c.set("requestId", requestId);
    c.header("x-request-id", requestId);
    c.set("services", s);
    const ip = resolveClientIp(config, c.req.raw.headers, c.env?.remoteAddr ?? "");
    c.set("clientIp", ip);
    const method = methodLabel(c.req.method);
    // The route is only read by tracing, metrics and the access log: with all three off (the
    // usual production setting of LOG_LEVEL=warn and above) it is not computed at all.
    const logRequests = log.enabled("info");
    const route = obs.tracing || obs.metrics || logRequests ? routeOf(c) : "";
    const maxMs = config.api.maxRequestDurationMs;
    const dbScope = new RequestDbScope(
      maxMs > 0 ? started + maxMs : Infinity,
      c.req.raw,
      log,
      requestId,
    );
    // The Accept-Language chooses the language of mails sent for the request (mail/locale.ts).
    const store: RequestStore = {
      requestId,
      dbScope,
      acceptLanguage: c.req.header("accept-language") ?? "",
    };
    const span = obs.tracing?.startRequestSpan(method, route, c.req.raw.headers);
    if (span && method === "_OTHER") {
      span.setAttribute("http.request.method_original", c.req.method);
    }
    if (span && obs.tracing) {
      store.span = span;
      store.tracer = obs.tracing.tracer;
    }
    try {
      await requestStore.run(store, next);
    } finally {
      dbScope.answered();
      const status = c.res.status;
      const durationSec = (performance.now() - started) / 1000;
      if (span) {
        span.setAttribute("http.route", route);
        span.setAttribute("http.response.status_code", status);
        const url = new URL(c.req.url);
        span.setAttribute("url.path", url.pathname); // never the query: it may carry tokens
        span.setAttribute("url.scheme", url.protocol.replace(":", ""));
        const ua = c.req.header("user-agent");
        if (ua) span.setAttribute("user_agent.original", ua.slice(0, 500));
        if (status >= 500) span.setAttribute("error.type", String(status));
        if (ip) span.setAttribute("client.address", ip);
        let params: Record<string, string> = {};
        try {
          params = route ? c.req.param() as Record<string, string> : {};
        } catch { /* no params */ }
        for (const [k, v] of Object.entries(params)) span.setAttribute(`http.route.params.${k}`, v);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
      obs.metrics?.recordRequest(method, route || "unmatched", status, durationSec);
      if (logRequests) {
        requestStore.run(store, () =>
          log.info("request", {
            method: c.req.method,
            route: route || "unmatched",
            status,
            duration_ms: Math.round(durationSec * 100000) / 100,
            remote_addr: ip,
          }));
      }
      // Set before the handler ran (into the headers its response is built with); a handler
      // that returned a Response of its own gets it now.
      if (c.res.headers.get("x-request-id") !== requestId) {
        setHeaderAfter(c, { "x-request-id": requestId });
      }
    }
  };
}

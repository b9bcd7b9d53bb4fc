/**
 * The observers of every request (`RequestObservers`, run by the road,
 * api/road.ts), and what they share with the database client: the request's
 * deadline and whether its client is still there (`RequestDbScope`).
 */
import { matchedRoutes } from "hono/route";
import type { Ctx } from "../api/context.ts";
import type { Services } from "../services.ts";
import { resolveClientIp } from "../security/client_ip.ts";
import type { RequestStore } from "./log.ts";
import type { Observability } from "./observability.ts";
import { type Span, SpanStatusCode } from "../../deps.ts";
import type { QueryScope } from "../db/pg/connection.ts";
import type { Logger } from "./log.ts";
import type { RouteMetrics } from "./metrics.ts";

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

/** What the console counts of each request (console/figures.ts). */
export interface RequestFigures {
  observe(method: string, path: string, status: number): void;
}

/** What the observers keep of one route, made once when the road is compiled. */
export interface RouteWatch {
  /** The parametrised route (`/admin/users/{user_id}`), or "unmatched". */
  readonly route: string;
  /** The route's access log line (LOG_LEVEL info), or null. */
  readonly access: ReturnType<Logger["accessLine"]>;
  /** The route's request metrics (METRICS_ENABLED), or undefined. */
  readonly metrics: RouteMetrics | undefined;
}

/** One request as the observers follow it: its async context (log.ts) and its start. */
export interface RequestTrack extends RequestStore {
  requestId: string;
  dbScope: RequestDbScope;
  started: number;
  ip: string;
  span?: Span;
}

/**
 * The observers of every request (api/road.ts calls `begin` first and `end`
 * last): the request id (generated, or inherited from REQUEST_ID_HEADER),
 * the client IP, the request's async context (so every log line of the
 * request carries its request id, and every database query its deadline),
 * its span, its metrics, the console's figures, and one access log line with
 * method, parametrised route, status and duration. Never the query string:
 * it may carry tokens.
 */
export class RequestObservers {
  readonly #s: Services;
  readonly #obs: Observability;
  readonly #figures: RequestFigures | undefined;
  readonly #idHeader: string;
  readonly #maxMs: number;

  constructor(s: Services, obs: Observability, figures?: RequestFigures) {
    this.#s = s;
    this.#obs = obs;
    this.#figures = figures;
    this.#idHeader = s.config.api.requestIdHeader;
    this.#maxMs = s.config.api.maxRequestDurationMs;
  }

  /** The observers' part of `route` (hono's path, `/admin/users/:user_id`, or "unmatched"). */
  watch(route: string): RouteWatch {
    const r = route === "unmatched" ? route : otelRoute(route);
    return { route: r, access: this.#s.log.accessLine(r), metrics: this.#obs.metrics?.route(r) };
  }

  /** A request starts: its id, services and client IP go into `c`. */
  begin(c: Ctx, watch: RouteWatch): RequestTrack {
    const started = performance.now();
    const raw = c.req.raw;
    const headers = raw.headers;
    const requestId = requestIdOf(this.#idHeader ? headers.get(this.#idHeader)?.trim() : undefined);
    const s = this.#s;
    c.set("requestId", requestId);
    c.set("services", s);
    const ip = resolveClientIp(s.config, headers, c.env?.remoteAddr ?? "");
    c.set("clientIp", ip);
    const maxMs = this.#maxMs;
    const dbScope = new RequestDbScope(
      maxMs > 0 ? started + maxMs : Infinity,
      raw,
      s.log,
      requestId,
    );
    // The Accept-Language chooses the language of mails sent for the request (mail/locale.ts).
    const acceptLanguage = headers.get("accept-language") ?? "";
    const track: RequestTrack = { requestId, dbScope, started, ip, acceptLanguage };
    const tracing = this.#obs.tracing;
    if (tracing) {
      const method = methodLabel(raw.method);
      const span = tracing.startRequestSpan(method, watch.route, headers);
      if (method === "_OTHER") span.setAttribute("http.request.method_original", raw.method);
      track.span = span;
      track.tracer = tracing.tracer;
    }
    return track;
  }

  /** The request is answered with `status` (its database scope already told, api/road.ts). */
  end(c: Ctx, track: RequestTrack, watch: RouteWatch, status: number): void {
    const ms = performance.now() - track.started;
    const method = c.req.method;
    if (track.span) endSpan(c, track.span, watch.route, status, track.ip);
    watch.metrics?.record(method, status, ms / 1000);
    this.#figures?.observe(method, c.req.path, status);
    watch.access?.(track.requestId, method, status, ms, track.ip);
  }
}

function endSpan(c: Ctx, span: Span, route: string, status: number, ip: string): void {
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
    params = route !== "unmatched" ? c.req.param() as Record<string, string> : {};
  } catch { /* no params */ }
  for (const [k, v] of Object.entries(params)) span.setAttribute(`http.route.params.${k}`, v);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * The one road every request takes. Each row of the route table (routes.ts)
 * is compiled once, when the server starts, into the one function that
 * answers it, and hono's router only picks that function (one handler per
 * route, so hono calls it directly, with no middleware chain of its own):
 *
 * 1. the observers begin (observe/request.ts): request id, client IP, the
 *    request's async context (log lines, database deadline), its span;
 * 2. the body-size and query checks;
 * 3. the row's guards, in the order the row names them, then its handler;
 * 4. an error anywhere in 2 and 3 gets the app's error answer (app.ts);
 * 5. the answer gets `X-Request-Id` and the CORS headers (cors.ts);
 * 6. the observers end: span, metrics, the console's figures, the access log.
 *
 * A request no row matches takes the same road as the row "unmatched": an
 * OPTIONS preflight is answered by cors.ts, anything else 404 not_found. The
 * operators' console (console/routes.ts) keeps its own small table of hono
 * routes under /console/, mounted on the road: the same steps, with the
 * console's middleware and routes as step 3 and no CORS.
 *
 * Nothing else answers a request (tests/server/core/road_test.ts): a guard
 * added to a row runs for every request of that row, and a server with
 * tracing, metrics or the console on takes this road as one without them.
 */
import { bodyLimit } from "hono/body-limit";
import type { MiddlewareHandler } from "../../deps.ts";
import type { Services } from "../services.ts";
import {
  type RequestFigures,
  RequestObservers,
  type RequestTrack,
  routeOf,
  type RouteWatch,
} from "../observe/request.ts";
import type { Observability } from "../observe/observability.ts";
import { requestStore } from "../observe/log.ts";
import type { AppEnv, Ctx } from "./context.ts";
import { isConsolePath, preflight, withCors } from "./cors.ts";
import { ApiError, errorResponse } from "./errors.ts";
import type { Guard } from "./guards.ts";
import { bodyReadFailure, checkQuery } from "./input.ts";

/** What a row's compiled function does between the checks and the answer. */
type Step = (c: Ctx) => Promise<Response>;

/** A handler of the route table (routes.ts). */
type RowHandler = (c: Ctx, s: Services) => Response | Promise<Response>;

/** The app's error answer: the answer to `err`, thrown while serving `route`. */
export type ErrorAnswer = (err: unknown, requestId: string, route: string) => Response;

/** What the road needs of the app. */
export interface RoadOptions {
  answerError: ErrorAnswer;
  /** The console's request counts (CONSOLE_ENABLED). */
  figures?: RequestFigures;
  /** The console is enabled: /console/ paths get no CORS headers. */
  console: boolean;
}

/** The road of one server. */
export class Road {
  readonly #observers: RequestObservers;
  readonly #answerError: ErrorAnswer;
  readonly #checked: (c: Ctx, inner: Step) => Promise<Response>;
  readonly #console: boolean;
  readonly #unmatched: (c: Ctx) => Promise<Response>;

  constructor(readonly services: Services, obs: Observability, opts: RoadOptions) {
    this.#observers = new RequestObservers(services, obs, opts.figures);
    this.#answerError = opts.answerError;
    this.#console = opts.console;
    this.#checked = sizeAndQueryChecks(services.config.api.maxBodyBytes);
    const answer = (c: Ctx) =>
      Promise.resolve(c.req.method === "OPTIONS" ? preflight() : notFound(c));
    this.#unmatched = this.#serve("unmatched", this.#observers.watch("unmatched"), answer, true);
  }

  /** The function that answers a row: `path` as hono writes it, the guards and handler. */
  row(path: string, guards: readonly Guard[], handler: RowHandler): (c: Ctx) => Promise<Response> {
    const s = this.services;
    let step: Step = async (c) => await handler(c, s);
    for (let i = guards.length - 1; i >= 0; i--) step = guarded(guards[i], step);
    return this.#serve(path, this.#observers.watch(path), step, true);
  }

  /**
   * hono's notFound handler: a request no row matched. Inside the console's mount (which
   * began the request already) only the 404 answer.
   */
  readonly unmatched = (c: Ctx): Promise<Response> | Response => {
    return c.get("requestId") !== undefined ? notFound(c) : this.#unmatched(c);
  };

  /**
   * The console's mount (`app.use("/console/*", ...)`, before its routes): the road's steps
   * around hono's dispatch of the console's own middleware and routes.
   */
  mount(): MiddlewareHandler<AppEnv> {
    return async (c, next) => {
      const step: Step = async (c) => {
        await next();
        // hono answers a route's error with app.onError (the app's error answer) in place.
        return c.res;
      };
      const route = routeOf(c) || "unmatched";
      const res = await this.#serve(route, this.#observers.watch(route), step, !this.#console)(c);
      c.res = undefined as unknown as Response; // not merged into: replaced
      c.res = res;
    };
  }

  /** A row compiled: the steps of the module's comment around `step`. */
  #serve(
    route: string,
    watch: RouteWatch,
    step: Step,
    cors: boolean,
  ): (c: Ctx) => Promise<Response> {
    const observers = this.#observers;
    const answerError = this.#answerError;
    const checked = this.#checked;
    const isConsole = this.#console;
    const run = async (c: Ctx, track: RequestTrack): Promise<Response> => {
      try {
        return await checked(c, step);
      } catch (e) {
        return answerError(e, track.requestId, route);
      }
    };
    return async (c) => {
      const track = observers.begin(c, watch);
      let res: Response;
      try {
        res = await requestStore.run(track, run, c, track);
      } finally {
        track.dbScope.answered();
      }
      const origin = cors && !(isConsole && isConsolePath(c.req.path))
        ? c.req.raw.headers.get("origin")
        : undefined;
      res = finish(res, track.requestId, origin);
      observers.end(c, track, watch, res.status);
      return res;
    };
  }
}

/** 404 not_found: no row for the request's method and path. */
function notFound(c: Ctx): Response {
  return errorResponse(
    new ApiError(404, "not_found", `No route for ${c.req.method} ${c.req.path}`),
    c.get("requestId"),
  );
}

/**
 * `res` with the request id and (unless `origin` is undefined: the console's paths) the CORS
 * headers; a response whose headers cannot change (Response.redirect) is copied first.
 */
function finish(res: Response, requestId: string, origin: string | null | undefined): Response {
  try {
    write(res.headers, requestId, origin);
    return res;
  } catch {
    const copy = new Response(res.body, res);
    write(copy.headers, requestId, origin);
    return copy;
  }
}

function write(h: Headers, requestId: string, origin: string | null | undefined): void {
  h.set("x-request-id", requestId);
  if (origin !== undefined) withCors(h, origin);
}

/** A guard (hono middleware) in front of `inner`: its answer, or inner's when it went on. */
function guarded(guard: Guard, inner: Step): Step {
  return async (c) => {
    let res: Response | undefined;
    const own = await guard(c, async () => {
      res = await inner(c);
    });
    return res ?? (own instanceof Response ? own : c.res);
  };
}

/**
 * The body-size limit (API_MAX_BODY_BYTES, 413) and the query check (input.ts), before the
 * guards. A GET or HEAD request has no body (fetch refuses one). A body of declared length (not
 * chunked) is judged by its Content-Length, without reading `body` first: that builds a body
 * stream per request in Deno. Chunked bodies are counted by hono's bodyLimit as they are read.
 */
function sizeAndQueryChecks(maxBody: number): (c: Ctx, inner: Step) => Promise<Response> {
  const tooLarge = () => {
    throw new ApiError(
      413,
      "request_entity_too_large",
      `Request body is larger than ${maxBody} bytes`,
    );
  };
  const limitBody = bodyLimit({ maxSize: maxBody, onError: tooLarge });
  return async (c, inner) => {
    const m = c.req.method;
    if (m === "GET" || m === "HEAD") {
      checkQuery(c.req.url);
      return await inner(c);
    }
    const headers = c.req.raw.headers;
    const length = headers.get("content-length");
    if (length !== null && !headers.has("transfer-encoding")) {
      if (parseInt(length || "0", 10) > maxBody) tooLarge();
      checkQuery(c.req.url);
      return await inner(c);
    }
    // bodyLimit reads a chunked body whole before the route: a connection that goes away
    // meanwhile fails that read (and only that: `reached` tells the route's own errors apart).
    let reached = false;
    let res: Response | undefined;
    await limitBody(c, async () => {
      reached = true;
      checkQuery(c.req.url);
      res = await inner(c);
    }).catch((e) => {
      throw reached ? e : bodyReadFailure(e);
    });
    return res ?? c.res;
  };
}

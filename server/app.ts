/**
 * Builds the server from Config and the services: the route table
 * (api/routes.ts), each row compiled into the function that answers it on
 * the one road (api/road.ts: request id, observers, size and query checks,
 * guards, handler, CORS), and the one error answer that turns AuthError (and
 * anything unexpected) into the contract's error body, with the status
 * api/errors.ts gives its code.
 */
import { Hono, HTTPException } from "../deps.ts";
import type { Config } from "./config/mod.ts";
import { type Db, DbConflictError, DbTimeoutError, DbUnavailableError, openDb } from "./db/db.ts";
import { migrate } from "./db/migrate.ts";
import { type Clock, systemClock } from "./auth/clock.ts";
import { describeError, fileSink, Logger } from "./observe/log.ts";
import { buildServices, type Services } from "./services.ts";
import { HashAbandonedError } from "./auth/passwords.ts";
import type { AppEnv } from "./api/context.ts";
import { ApiError, AuthError, errorResponse, statusOf } from "./api/errors.ts";
import { BodyAbandonedError } from "./api/input.ts";
import { registerRoutes, type Route, ROUTES } from "./api/routes.ts";
import { Road } from "./api/road.ts";
import { Observability } from "./observe/observability.ts";
import { ConsoleFigures } from "./console/figures.ts";
import { ActivityStore } from "./store/activity.ts";
import { consoleRoutes } from "./console/routes.ts";

/** A built server: a fetch handler plus its services. */
export interface App {
  app: Hono<AppEnv>;
  /** Handles one request; `remoteAddr` is the socket's address. */
  fetch(req: Request, remoteAddr?: string): Promise<Response>;
  services: Services;
  /** Closes the database and background work. */
  close(): Promise<void>;
}

/** Options of createApp. */
export interface CreateAppOptions {
  /** An open database; when absent one is opened from Config and closed by close(). */
  db?: Db;
  clock?: Clock;
  log?: Logger;
  /** Apply pending migrations first (default true). */
  migrate?: boolean;
  /** The route table (default ROUTES, api/routes.ts); a test adds guards to its rows. */
  routes?: readonly Route[];
}

/** Opens the database `config` names (PostgreSQL or PGlite), its client's warnings to `log`. */
export function openConfiguredDb(config: Config, log: Logger): Promise<Db> {
  return openDb({
    url: config.db.url,
    dataDir: config.db.dataDir,
    maxPoolSize: config.db.maxPoolSize,
    statementTimeoutMs: config.db.statementTimeoutMs,
    unnamedStatements: config.db.unnamedStatements,
    prefix: config.db.namespace,
    warn: (m) => log.warn(m),
  });
}

/** Builds the server. */
export async function createApp(config: Config, opts: CreateAppOptions = {}): Promise<App> {
  const log = opts.log ??
    new Logger(config.log.level, config.log.file ? fileSink(config.log.file) : undefined);
  const ownDb = !opts.db;
  const db = opts.db ?? await openConfiguredDb(config, log);
  if (opts.migrate !== false) {
    await migrate(db, (m) => log.info(m));
  }
  const obs = await Observability.create(config, log);
  const services = await buildServices(config, obs.wrapDb(db), opts.clock ?? systemClock, log);
  if (ownDb) services.onClose.unshift(() => db.close());
  services.onClose.unshift(() => obs.shutdown());
  // Registered last, so it stops first: a pass under way ends before the database closes.
  services.onClose.push(() => services.cleanup.stop());
  try {
    await obs.attach(services.events, db);
  } catch (e) {
    for (const fn of [...services.onClose].reverse()) await fn();
    throw e;
  }

  // The error answer of every route (api/road.ts).
  const answerError = (err: unknown, requestId: string, route: string): Response => {
    if (err instanceof AuthError) {
      if (err.cause !== undefined && statusOf(err) >= 500) {
        log.error("request failed", {
          request_id: requestId,
          route,
          error_code: err.errorCode,
          error: describeError(err),
        });
      }
      return errorResponse(err, requestId);
    }
    if (err instanceof HashAbandonedError || err instanceof BodyAbandonedError) {
      // The client closed the connection before its password was hashed (auth/passwords.ts), or
      // while it sent its body (api/input.ts): nobody reads this answer, and nothing went wrong
      // here; the access log shows 499, nginx's "client closed request".
      log.debug("request abandoned by its client", { request_id: requestId, route });
      return new Response(null, { status: 499 });
    }
    if (err instanceof DbUnavailableError) {
      log.error("database unavailable", { request_id: requestId, error: err.message });
      return errorResponse(
        new ApiError(
          503,
          "service_unavailable",
          "Service temporarily unavailable: database not reachable",
          {},
          {
            "Retry-After": "5",
          },
        ),
        requestId,
      );
    }
    if (err instanceof DbConflictError) {
      // A deadlock or serialization failure that persisted through the retries (db.ts):
      // nothing was written; the client may simply send the request again.
      log.warn("database conflict", { request_id: requestId, error: err.message });
      return errorResponse(
        new ApiError(
          409,
          "conflict",
          "The request conflicted with concurrent requests on the same data and was not applied: please retry.",
          {},
          { "Retry-After": "1" },
        ),
        requestId,
      );
    }
    if (err instanceof DbTimeoutError) {
      // GoTrue's answer when a request runs out of time (API_MAX_REQUEST_DURATION).
      log.warn("database timeout", {
        request_id: requestId,
        reason: err.reason,
        error: err.message,
      });
      return errorResponse(
        new ApiError(
          504,
          "request_timeout",
          "Processing this request timed out, please retry after a moment.",
        ),
        requestId,
      );
    }
    if (err instanceof HTTPException) {
      const status = err.status;
      return errorResponse(
        new ApiError(
          status,
          status === 413 ? "validation_failed" : "unexpected_failure",
          err.message || "Request failed",
        ),
        requestId,
      );
    }
    log.error("unexpected error", {
      request_id: requestId,
      route,
      error: describeError(err),
      stack: err instanceof Error ? err.stack?.split("\n").slice(0, 6).join(" | ") : undefined,
    });
    return errorResponse(
      new ApiError(
        500,
        "unexpected_failure",
        "Unexpected failure, please check server logs for more information",
      ),
      requestId,
    );
  };
  const app = new Hono<AppEnv>();
  // Errors of the console's own middleware and routes (the rows' are answered on the road).
  app.onError((err, c) => answerError(err, c.get("requestId") ?? "", c.req.routePath));

  let figures: ConsoleFigures | undefined;
  if (config.console.enabled) {
    figures = new ConsoleFigures(
      services.events,
      services.clock,
      new ActivityStore(services.db),
      log,
    );
    // Runs first at close: the last counts are written while the database is open.
    services.onClose.push(() => figures!.close());
  }
  const road = new Road(services, obs, { answerError, figures, console: figures !== undefined });
  if (figures) {
    app.use("/console/*", road.mount());
    await consoleRoutes(app, services, figures);
  }
  registerRoutes(app, road, opts.routes ?? ROUTES);
  app.notFound(road.unmatched);

  services.cleanup.start();
  let closed = false;
  return {
    app,
    fetch: (req, remoteAddr) => Promise.resolve(app.fetch(req, { remoteAddr })),
    services,
    async close() {
      if (closed) return;
      closed = true;
      for (const fn of [...services.onClose].reverse()) {
        try {
          await fn();
        } catch (e) {
          log.warn("error during shutdown", { error: String(e) });
        }
      }
      log.flush();
    },
  };
}

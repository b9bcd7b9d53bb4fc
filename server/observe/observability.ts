/**
 * The observers of one server, built from Config: tracing and metrics when
 * enabled. `app.ts` wraps the database with `wrapDb` before building the
 * services, calls `attach` once the services exist, and mounts
 * `requestObserver` (observe/request.ts) first of all middleware.
 */
import type { Config } from "../config.ts";
import type { Db } from "../db/db.ts";
import type { Events } from "../auth/events.ts";
import type { Logger } from "./log.ts";
import { Metrics } from "./metrics.ts";
import { setupDiagnostics } from "./otel.ts";
import { Tracing } from "./tracing.ts";

/** Tracing and metrics of one server (each undefined when disabled). */
export class Observability {
  tracing?: Tracing;
  metrics?: Metrics;

  constructor(readonly config: Config, readonly log: Logger) {
    if (config.tracing.enabled || config.metrics.enabled) setupDiagnostics(config, log);
    if (config.tracing.enabled) this.tracing = new Tracing(config, log);
  }

  /** The database, traced when tracing is on. */
  wrapDb(db: Db): Db {
    return this.tracing ? this.tracing.wrapDb(db) : db;
  }

  /** Starts metrics (subscribing to the domain events and the database pool's). */
  attach(events: Events, db?: Db): void {
    if (this.config.metrics.enabled) {
      this.metrics = Metrics.start(this.config, events, this.log, db);
    }
  }

  /** Flushes and stops the exporters. */
  async shutdown(): Promise<void> {
    const errors: unknown[] = [];
    for (const part of [this.metrics, this.tracing]) {
      try {
        await part?.shutdown();
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length && this.config.debug) {
      this.log.warn("telemetry export problem", { error: errors.map(String).join("; ") });
    }
  }
}

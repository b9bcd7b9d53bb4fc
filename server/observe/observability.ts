/**
 * The observers of one server, built from Config: tracing and metrics when
 * enabled. `app.ts` wraps the database with `wrapDb` before building the
 * services, calls `attach` once the services exist, and the road
 * (api/road.ts) runs the request observers (observe/request.ts). The
 * OpenTelemetry SDK is loaded only when one of them is enabled.
 */
import type { Config } from "../config/mod.ts";
import type { Db } from "../db/db.ts";
import type { Events } from "../auth/events.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import type { Tracing } from "./tracing.ts";

/** Tracing and metrics of one server (each undefined when disabled). */
export class Observability {
  tracing?: Tracing;
  metrics?: Metrics;

  private constructor(readonly config: Config, readonly log: Logger) {}

  /** Starts tracing when enabled. */
  static async create(config: Config, log: Logger): Promise<Observability> {
    const obs = new Observability(config, log);
    if (config.tracing.enabled || config.metrics.enabled) {
      (await import("./otel.ts")).setupDiagnostics(config, log);
    }
    if (config.tracing.enabled) {
      obs.tracing = await (await import("./tracing.ts")).Tracing.start(config, log);
    }
    return obs;
  }

  /** The database, traced when tracing is on. */
  wrapDb(db: Db): Db {
    return this.tracing ? this.tracing.wrapDb(db) : db;
  }

  /** Starts metrics (subscribing to the domain events and the database pool's). */
  async attach(events: Events, db?: Db): Promise<void> {
    if (this.config.metrics.enabled) {
      const { Metrics } = await import("./metrics.ts");
      this.metrics = await Metrics.start(this.config, events, this.log, db);
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

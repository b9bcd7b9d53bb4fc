/**
 * Metrics (METRICS_ENABLED): requests by route, method and status (count and
 * duration), sign-ups, sign-ins by method, token refreshes, e-mails and SMS
 * sent, audit entries, the runtime's own (memory, event-loop lag, uptime),
 * and the PostgreSQL pool's (connections by state, waits for a connection,
 * timeouts; OpenTelemetry's db.client.* names). The domain counters come from
 * `s.events`, so endpoints only emit.
 *
 * Exporters: `prometheus` serves the text format on
 * OTEL_EXPORTER_PROMETHEUS_HOST:PORT at paths `/` and `/metrics` (this server's own listener,
 * so port 0 works in tests); `opentelemetry` pushes over OTLP/HTTP every
 * OTEL_METRIC_EXPORT_INTERVAL ms (default 60000).
 */
import type { Meter } from "../../deps.ts";
import { ValueType } from "@opentelemetry/api";
import {
  AggregationTemporality,
  type CollectionResult,
  DataPointType,
  MeterProvider,
  type MetricData,
  type MetricProducer,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import type { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import type { Config } from "../config/mod.ts";
import type { Events } from "../auth/events.ts";
import type { Db } from "../db/db.ts";
import { VERSION } from "../version.ts";
import type { Logger } from "./log.ts";
import { otelInt, otelResource, otlpOptions } from "./otel.ts";

type Attrs = Record<string, string | number>;

const DURATION_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The methods HTTP defines (OpenTelemetry's HTTP conventions); any other is `_OTHER`. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"];

const WAIT_BOUNDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10];

/** One attribute set of a histogram: a count, a sum, the extremes and the bucket counts. */
interface Point {
  readonly attributes: Attrs;
  readonly bounds: readonly number[];
  count: number;
  sum: number;
  min: number;
  max: number;
  readonly buckets: number[];
}

function newPoint(attributes: Attrs, bounds: readonly number[]): Point {
  const buckets = new Array(bounds.length + 1).fill(0);
  return { attributes, bounds, count: 0, sum: 0, min: Infinity, max: -Infinity, buckets };
}

/** Adds `value` to `p` (no allocation). */
function add(p: Point, value: number): void {
  p.count++;
  p.sum += value;
  if (value < p.min) p.min = value;
  if (value > p.max) p.max = value;
  const bounds = p.bounds;
  let i = 0;
  while (i < bounds.length && value > bounds[i]) i++;
  p.buckets[i]++;
}

/**
 * The request metrics of one route (api/road.ts gets it once, when the route
 * is compiled): a request adds to numbers kept for its method and status, so
 * recording one builds no attribute set, no key and no object (the SDK's
 * instruments hash their attributes on every call). The SDK reads them when
 * it collects (`RequestMetrics`).
 */
export class RouteMetrics {
  readonly #points = new Map<number, Point>();
  readonly #all: Point[];

  constructor(readonly route: string, all: Point[]) {
    this.#all = all;
  }

  /** Counts one request of `method` answered with `status` after `seconds`. */
  record(method: string, status: number, seconds: number): void {
    const m = METHODS.indexOf(method);
    const key = status * 16 + (m < 0 ? 15 : m);
    add(this.#points.get(key) ?? this.#add(key, m < 0 ? "_OTHER" : method, status), seconds);
  }

  #add(key: number, method: string, status: number): Point {
    const attributes: Attrs = {
      "http.request.method": method,
      "http.route": this.route,
      "http.response.status_code": status,
      "url.scheme": "http",
    };
    if (status >= 500) attributes["error.type"] = String(status);
    const p = newPoint(attributes, DURATION_BOUNDS);
    this.#points.set(key, p);
    this.#all.push(p);
    return p;
  }
}

/**
 * The metrics recorded on every request, read by the SDK as a producer of
 * its own (cumulative since the start), as the SDK's counter and histograms
 * would report them: `http.server.requests` and `http.server.request.duration`
 * by route, method and status, and the pool's `db.client.connection.wait_time`
 * (recorded for every transaction).
 */
class RequestMetrics implements MetricProducer {
  readonly #routes = new Map<string, RouteMetrics>();
  readonly #points: Point[] = [];
  readonly #start = hrTime();
  readonly wait = newPoint({ "db.client.connection.pool.name": "authsvc" }, WAIT_BOUNDS);
  #waits = false;

  /** The pool's wait time, once the pool is observed. */
  recordWait(seconds: number): void {
    this.#waits = true;
    add(this.wait, seconds);
  }

  constructor(readonly resource: ReturnType<typeof otelResource>) {}

  route(route: string): RouteMetrics {
    let r = this.#routes.get(route);
    if (!r) this.#routes.set(route, r = new RouteMetrics(route, this.#points));
    return r;
  }

  collect(): Promise<CollectionResult> {
    const startTime = this.#start;
    const endTime = hrTime();
    const points = this.#points;
    const metrics: MetricData[] = [
      {
        descriptor: {
          name: "http.server.requests",
          description: "HTTP requests handled, by route, method and status",
          unit: "",
          valueType: ValueType.INT,
        },
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.SUM,
        isMonotonic: true,
        dataPoints: points.map((p) => ({
          startTime,
          endTime,
          attributes: p.attributes,
          value: p.count,
        })),
      },
      histogram(
        "http.server.request.duration",
        "Duration of HTTP requests, by route, method and status",
        points,
        startTime,
        endTime,
      ),
    ];
    if (this.#waits) {
      metrics.push(histogram(
        "db.client.connection.wait_time",
        "Time to obtain a PostgreSQL connection: transactions, and statements that had to wait",
        [this.wait],
        startTime,
        endTime,
      ));
    }
    return Promise.resolve({
      resourceMetrics: {
        resource: this.resource,
        scopeMetrics: [{ scope: { name: "authsvc", version: VERSION }, metrics }],
      },
      errors: [],
    });
  }
}

function histogram(
  name: string,
  description: string,
  points: Point[],
  startTime: [number, number],
  endTime: [number, number],
): MetricData {
  return {
    descriptor: { name, description, unit: "s", valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.HISTOGRAM,
    dataPoints: points.map((p) => ({
      startTime,
      endTime,
      attributes: p.attributes,
      value: {
        buckets: { boundaries: p.bounds as number[], counts: p.buckets.slice() },
        sum: p.sum,
        count: p.count,
        min: p.min,
        max: p.max,
      },
    })),
  };
}

function hrTime(): [number, number] {
  const ms = Date.now();
  return [Math.floor(ms / 1000), (ms % 1000) * 1e6];
}

function str(v: unknown, fallback: string): string {
  return typeof v === "string" && v ? v : fallback;
}

/** The metrics of one server. */
export class Metrics {
  readonly #provider: MeterProvider;
  readonly #stop: (() => Promise<void> | void)[] = [];
  /** Where the Prometheus text is served (`http://host:port/`), when that exporter runs. */
  prometheusUrl = "";
  readonly #requests: RequestMetrics;

  private constructor(provider: MeterProvider, requests: RequestMetrics) {
    this.#provider = provider;
    this.#requests = requests;
  }

  /**
   * Starts the configured exporter (only its module is loaded) and subscribes
   * to the domain events.
   */
  static async start(config: Config, events: Events, log: Logger, db?: Db): Promise<Metrics> {
    const resource = otelResource(config);
    const requests = new RequestMetrics(resource);
    const metricProducers = [requests];
    let m: Metrics;
    if (config.metrics.exporter === "prometheus") {
      const prometheus = await import("@opentelemetry/exporter-prometheus");
      const exporter = new prometheus.PrometheusExporter({
        preventServerStart: true,
        metricProducers,
      });
      const provider = new MeterProvider({ resource, readers: [exporter] });
      m = new Metrics(provider, requests);
      m.#servePrometheus(config, exporter, new prometheus.PrometheusSerializer(), log);
    } else {
      const o = otlpOptions(config, "metrics", log);
      const opts = { url: o.url, headers: o.headers, timeoutMillis: o.timeoutMillis };
      const { OTLPMetricExporter } = o.protocol === "http/json"
        ? await import("@opentelemetry/exporter-metrics-otlp-http")
        : await import("@opentelemetry/exporter-metrics-otlp-proto");
      const exporter = new OTLPMetricExporter(opts);
      const interval = otelInt(config, "OTEL_METRIC_EXPORT_INTERVAL", 60000);
      const reader = new PeriodicExportingMetricReader({
        exporter,
        metricProducers,
        exportIntervalMillis: interval,
        exportTimeoutMillis: Math.min(
          interval,
          otelInt(config, "OTEL_METRIC_EXPORT_TIMEOUT", 30000),
        ),
      });
      const provider = new MeterProvider({ resource, readers: [reader] });
      m = new Metrics(provider, requests);
      log.info("metrics enabled", { exporter: "otlp", protocol: o.protocol, endpoint: o.url });
    }
    const meter = m.#provider.getMeter("authsvc", VERSION);
    m.#observeEvents(events, meter);
    m.#observeRuntime(meter);
    if (db?.monitor) m.#observeDb(meter, db);
    return m;
  }

  /** Where the requests of `route` (parametrised, or "unmatched") are counted. */
  route(route: string): RouteMetrics {
    return this.#requests.route(route);
  }

  /** Exports what is pending and stops the exporter (and its listener). */
  async shutdown(): Promise<void> {
    for (const fn of this.#stop.reverse()) await fn();
    await this.#provider.shutdown();
  }

  #observeEvents(events: Events, meter: Meter): void {
    const signups = meter.createCounter("auth.signups", {
      description: "Users created, by method",
    });
    const signins = meter.createCounter("auth.signins", {
      description: "Sessions issued, by method",
    });
    const refreshes = meter.createCounter("auth.token_refreshes", {
      description: "Refresh-token grants",
    });
    const mails = meter.createCounter("auth.mails_sent", { description: "E-mails sent, by kind" });
    const sms = meter.createCounter("auth.sms_sent", { description: "SMS sent, by provider" });
    const audit = meter.createCounter("auth.audit_entries", {
      description: "Audit entries, by action",
    });
    events.on("signup", (a) => signups.add(1, { method: str(a.method, "unknown") }));
    events.on("signin", (a) => signins.add(1, { method: str(a.method, "unknown") }));
    events.on("token_refresh", () => refreshes.add(1));
    events.on("mail_sent", (a) => mails.add(1, { kind: str(a.kind, "unknown") }));
    events.on("sms_sent", (a) => sms.add(1, { provider: str(a.provider, "unknown") }));
    events.on("audit", (a) => audit.add(1, { action: str(a.action, "unknown") }));
  }

  #observeDb(meter: Meter, db: Db): void {
    const monitor = db.monitor!;
    const pool = { "db.client.connection.pool.name": "authsvc" };
    meter.createObservableUpDownCounter("db.client.connection.count", {
      description: "PostgreSQL connections by state: idle, or used (queries in flight, reserved)",
      unit: "{connection}",
    }).addCallback((r) => {
      const s = monitor.stats();
      r.observe(s.idle, { ...pool, "db.client.connection.state": "idle" });
      r.observe(s.used, { ...pool, "db.client.connection.state": "used" });
    });
    meter.createObservableUpDownCounter("db.client.connection.max", {
      description: "PostgreSQL connections the pool may open",
      unit: "{connection}",
    }).addCallback((r) => r.observe(monitor.stats().max, pool));
    meter.createObservableUpDownCounter("db.client.connection.pending_requests", {
      description: "Callers waiting for a PostgreSQL connection",
      unit: "{request}",
    }).addCallback((r) => r.observe(monitor.stats().pending, pool));
    const poolTimeouts = meter.createCounter("db.client.connection.timeouts", {
      description: "Waits for a PostgreSQL connection given up at the request's deadline",
    });
    const timeouts = meter.createCounter("db.client.operation.timeouts", {
      description:
        "Statements given up, by reason: deadline (API_MAX_REQUEST_DURATION), client_gone, statement_timeout",
    });
    const requests = this.#requests;
    monitor.onWait = (seconds) => requests.recordWait(seconds);
    monitor.onTimeout = (reason) => {
      if (reason === "pool_timeout") poolTimeouts.add(1, pool);
      else timeouts.add(1, { ...pool, reason });
    };
    this.#stop.push(() => {
      monitor.onWait = null;
      monitor.onTimeout = null;
    });
  }

  #observeRuntime(meter: Meter): void {
    const started = performance.now();
    let lagSec = 0;
    let expected = performance.now() + 500;
    const timer = setInterval(() => {
      const now = performance.now();
      lagSec = Math.max(0, now - expected) / 1000;
      expected = now + 500;
    }, 500);
    Deno.unrefTimer(timer);
    this.#stop.push(() => clearInterval(timer));
    meter.createObservableGauge("process.runtime.memory.rss", {
      description: "Resident set size",
      unit: "By",
    }).addCallback((r) => r.observe(Deno.memoryUsage().rss));
    meter.createObservableGauge("process.runtime.memory.heap_used", {
      description: "JavaScript heap in use",
      unit: "By",
    }).addCallback((r) => r.observe(Deno.memoryUsage().heapUsed));
    meter.createObservableGauge("process.runtime.event_loop.lag", {
      description: "Delay of a 500 ms timer: how long the event loop was busy",
      unit: "s",
    }).addCallback((r) => r.observe(lagSec));
    meter.createObservableGauge("process.uptime", {
      description: "Seconds since this server started",
      unit: "s",
    }).addCallback((r) => r.observe((performance.now() - started) / 1000));
  }

  #servePrometheus(
    config: Config,
    exporter: PrometheusExporter,
    serializer: PrometheusSerializer,
    log: Logger,
  ): void {
    const ac = new AbortController();
    const { prometheusHost: hostname, prometheusPort: port } = config.metrics;
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      server = Deno.serve(
        { hostname, port, signal: ac.signal, onListen: () => {} },
        async (req) => {
          const path = new URL(req.url).pathname;
          if (path !== "/" && path !== "/metrics") { // "/" as spec 2.5 says; /metrics as scrapers expect
            return new Response("Not found\n", { status: 404 });
          }
          const { resourceMetrics, errors } = await exporter.collect();
          for (const e of errors) log.warn("metrics collection problem", { error: String(e) });
          return new Response(serializer.serialize(resourceMetrics), {
            headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
          });
        },
      );
    } catch (e) {
      throw new Error(
        `cannot serve Prometheus metrics on ${hostname}:${port} (OTEL_EXPORTER_PROMETHEUS_HOST/PORT): ${
          (e as Error).message
        }`,
      );
    }
    const shownHost = hostname.includes(":") ? `[${hostname}]` : hostname;
    this.prometheusUrl = `http://${shownHost}:${server.addr.port}/`;
    this.#stop.push(async () => {
      ac.abort();
      await server.finished;
    });
    log.info("metrics enabled", { exporter: "prometheus", url: this.prometheusUrl });
  }
}

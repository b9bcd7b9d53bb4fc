/**
 * Traces (TRACING_ENABLED, exporter `opentelemetry`): one server span per
 * request named `{method} {route}` (`GET /admin/users/{user_id}`), with
 * `http.request.method`, `http.route` and `http.route.params.<key>` (the
 * attributes: docs/operations.md, "Tracing"); database calls and
 * outgoing HTTP calls (`fetch`) of that request as child spans. Exported over
 * OTLP/HTTP (protobuf by default, JSON with OTEL_EXPORTER_OTLP_PROTOCOL=
 * http/json) in batches, to the endpoint of the standard OTEL_* variables.
 * An incoming W3C `traceparent` makes the request span its child.
 */
import {
  type Attributes,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "../../deps.ts";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { Config } from "../config/mod.ts";
import type { Db, Queryable } from "../db/db.ts";
import { VERSION } from "../version.ts";
import { type Logger, requestStore } from "./log.ts";
import { otelInt, otelResource, otlpOptions } from "./otel.ts";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The tracer of one server. */
export class Tracing {
  readonly tracer: Tracer;
  readonly #provider: TracerProvider;

  /** Starts tracing with the configured OTLP exporter (only its module is loaded). */
  static async start(config: Config, log: Logger): Promise<Tracing> {
    const o = otlpOptions(config, "traces", log);
    const exporterOpts = { url: o.url, headers: o.headers, timeoutMillis: o.timeoutMillis };
    const { OTLPTraceExporter } = o.protocol === "http/json"
      ? await import("@opentelemetry/exporter-trace-otlp-http")
      : await import("@opentelemetry/exporter-trace-otlp-proto");
    const tracing = new Tracing(config, log, new OTLPTraceExporter(exporterOpts));
    log.info("tracing enabled", { exporter: "otlp", protocol: o.protocol, endpoint: o.url });
    return tracing;
  }

  private constructor(config: Config, log: Logger, exporter: SpanExporter) {
    this.#provider = new TracerProvider({
      resource: otelResource(config),
      sampler: traceSampler(config, log),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter,
          scheduledDelayMillis: otelInt(config, "OTEL_BSP_SCHEDULE_DELAY", 5000),
          maxExportBatchSize: otelInt(config, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
          maxQueueSize: otelInt(config, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
          exportTimeoutMillis: otelInt(config, "OTEL_BSP_EXPORT_TIMEOUT", 30000),
        }),
      ],
    });
    this.tracer = this.#provider.getTracer("authsvc", VERSION);
    installFetchTracing();
  }

  /** Starts the server span of a request (ended by the caller). */
  startRequestSpan(method: string, route: string, headers: Headers): Span {
    let parent = ROOT_CONTEXT;
    const tp = TRACEPARENT.exec(headers.get("traceparent")?.trim().toLowerCase() ?? "");
    if (tp && !/^0+$/.test(tp[1]) && !/^0+$/.test(tp[2])) {
      parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: tp[1],
        spanId: tp[2],
        traceFlags: parseInt(tp[3], 16),
        isRemote: true,
      });
    }
    // OpenTelemetry HTTP semantic conventions: "{method} {route}", or the method alone; "HTTP"
    // for a method they do not know (`_OTHER`, request.ts).
    const name = method === "_OTHER" ? "HTTP" : method;
    return this.tracer.startSpan(route ? `${name} ${route}` : name, {
      kind: SpanKind.SERVER,
      attributes: { "http.request.method": method },
    }, parent);
  }

  /** The Db with a child span around every query and transaction made during a request. */
  wrapDb(db: Db): Db {
    const wrapQ = (q: Queryable): Queryable => ({
      query: (text, params) =>
        inChildSpan(dbSpanName(text), dbAttributes(text), () => q.query(text, params)),
      exec: (text) => inChildSpan("db.exec", dbAttributes(text), () => q.exec(text)),
    });
    const plain = wrapQ(db);
    return {
      kind: db.kind,
      prefix: db.prefix,
      t: (name) => db.t(name),
      query: plain.query,
      exec: plain.exec,
      transaction: (fn) =>
        inChildSpan(
          "db.transaction",
          { "db.system.name": "postgresql" },
          () => db.transaction((tx) => fn(wrapQ(tx))),
        ),
      withConnection: (fn) => db.withConnection((conn) => fn(wrapQ(conn))),
      ping: () => db.ping(),
      close: () => db.close(),
      monitor: db.monitor,
    };
  }

  /** Exports what is buffered and stops. */
  async shutdown(): Promise<void> {
    await this.#provider.shutdown();
  }
}

/**
 * The sampler of OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, the standard
 * variables (OpenTelemetry SDK environment variables): `parentbased_always_on`
 * by default, which follows the sampled flag of an incoming `traceparent`. An
 * unknown value or ratio falls back to the default with a warning.
 */
export function traceSampler(config: Config, log: Logger): Sampler {
  const name = config.otel.env.OTEL_TRACES_SAMPLER ?? "parentbased_always_on";
  const ratio = (): Sampler => {
    const arg = config.otel.env.OTEL_TRACES_SAMPLER_ARG ?? "1";
    const p = Number(arg);
    if (arg.trim() !== "" && p >= 0 && p <= 1) return new TraceIdRatioBasedSampler(p);
    log.warn(`OTEL_TRACES_SAMPLER_ARG "${arg}" is not a ratio from 0 to 1: using 1`);
    return new TraceIdRatioBasedSampler(1);
  };
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
  }
  log.warn(
    `OTEL_TRACES_SAMPLER "${name}" is not one of always_on, always_off, traceidratio, ` +
      `parentbased_always_on, parentbased_always_off, parentbased_traceidratio: using ` +
      `parentbased_always_on`,
  );
  return new ParentBasedSampler({ root: new AlwaysOnSampler() });
}

function dbSpanName(sql: string): string {
  const m =
    /^\s*(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|WITH|BEGIN|COMMIT|ROLLBACK|\w+)\s*("?[\w.]+"?)?/i
      .exec(sql);
  if (!m) return "db.query";
  const op = m[1].split(/\s+/)[0].toUpperCase();
  const target = /^(INSERT|UPDATE|DELETE)$/.test(op) ? m[2]?.replaceAll('"', "") : undefined;
  return target ? `${op} ${target}` : op;
}

function dbAttributes(sql: string): Attributes {
  // Statements carry $n placeholders, never values: safe to record.
  // OpenTelemetry database semantic conventions (db.system.name, db.query.text,
  // db.operation.name, db.collection.name).
  const name = dbSpanName(sql);
  const [op, table] = name.split(" ");
  const attrs: Attributes = {
    "db.system.name": "postgresql",
    "db.query.text": sql.replace(/\s+/g, " ").trim().slice(0, 2000),
  };
  if (name !== "db.query") attrs["db.operation.name"] = op;
  if (table) attrs["db.collection.name"] = table;
  return attrs;
}

/** The request's span when it is still open (a span of this server's tracer). */
function openParent(): { parent: Span; tracer: Tracer } | undefined {
  const store = requestStore.getStore();
  const parent = store?.span as Span | undefined;
  const tracer = store?.tracer as Tracer | undefined;
  if (!parent || !tracer || !parent.isRecording()) return undefined;
  return { parent, tracer };
}

/** Runs `fn` in a client span, child of the request's current span (when tracing). */
export async function inChildSpan<T>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  const p = openParent();
  if (!p) return await fn();
  const span = p.tracer.startSpan(
    name,
    { kind: SpanKind.CLIENT, attributes },
    trace.setSpan(ROOT_CONTEXT, p.parent),
  );
  const store = requestStore.getStore()!;
  try {
    return await requestStore.run({ ...store, span }, fn);
  } catch (e) {
    span.setAttribute("error.type", e instanceof Error ? e.name : "_OTHER");
    span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.name : "error" });
    throw e;
  } finally {
    span.end();
  }
}

let fetchInstalled = false;

/**
 * Wraps `globalThis.fetch` once per process: a call made while a traced
 * request is being handled becomes a child span (method, server address, path,
 * status; never the query string, which may carry secrets). Calls outside a
 * traced request pass straight through.
 */
function installFetchTracing(): void {
  if (fetchInstalled) return;
  fetchInstalled = true;
  const original = globalThis.fetch;
  globalThis.fetch = function tracedFetch(input: RequestInfo | URL, init?: RequestInit) {
    if (!openParent()) return original(input, init);
    const req = input instanceof Request ? input : undefined;
    const method = (init?.method ?? req?.method ?? "GET").toUpperCase();
    let url: URL | undefined;
    try {
      url = new URL(req ? req.url : String(input));
    } catch { /* fetch itself reports it */ }
    const attrs: Attributes = { "http.request.method": method };
    if (url) {
      attrs["server.address"] = url.hostname;
      attrs["server.port"] = Number(url.port || (url.protocol === "https:" ? 443 : 80));
      attrs["url.full"] = `${url.origin}${url.pathname}`;
    }
    // An HTTP client span is named by its method (no URL template is known).
    return inChildSpan(method, attrs, async () => {
      const res = await original(input, init);
      const span = requestStore.getStore()?.span as Span | undefined;
      span?.setAttribute("http.response.status_code", res.status);
      if (res.status >= 400) {
        span?.setAttribute("error.type", String(res.status));
        span?.setStatus({ code: SpanStatusCode.ERROR });
      }
      return res;
    });
  } as typeof fetch;
}

/**
 * Logs, traces and metrics (server/observe/): the log level and file, the
 * OpenTelemetry exporters and the Prometheus listener. The standard OTEL_*
 * variables are passed on to the exporters as they are.
 */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const OBSERVABILITY_SECTION: SectionDoc = {
  title: "Logs, traces and metrics",
  about:
    "The log, OpenTelemetry traces and metrics, and the Prometheus listener ([operations.md](operations.md#request-ids-and-logs)).",
};

export const LOG_LEVELS = ["panic", "fatal", "error", "warn", "info", "debug"] as const;
export type LogLevel = typeof LOG_LEVELS[number];

/** The observability part of `Config`. */
export interface ObservabilitySettings {
  log: { level: LogLevel; file: string };
  tracing: { enabled: boolean; exporter: "opentelemetry" };
  metrics: {
    enabled: boolean;
    exporter: "opentelemetry" | "prometheus";
    prometheusHost: string;
    prometheusPort: number;
  };
  otel: { resourceAttributes: Record<string, string>; env: Record<string, string> };
  debug: boolean;
}

export function readObservability(r: ConfigReader): ObservabilitySettings {
  const otelEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.env)) if (k.startsWith("OTEL_") && v) otelEnv[k] = v;
  return {
    log: {
      level: r.oneOf("LOG_LEVEL", LOG_LEVELS, {
        noPrefix: true,
        default: "info",
        doc: "log level",
      }),
      file: r.string("LOG_FILE", { doc: "append logs to this file" }),
    },
    tracing: {
      enabled: r.bool("TRACING_ENABLED", { doc: "OpenTelemetry traces over OTLP" }),
      exporter: r.oneOf("TRACING_EXPORTER", ["opentelemetry"] as const, {
        default: "opentelemetry",
        doc: "traces go out over OTLP/HTTP (OTEL_EXPORTER_OTLP_* variables)",
      }),
    },
    metrics: {
      enabled: r.bool("METRICS_ENABLED", { doc: "request, sign-in and runtime metrics" }),
      exporter: r.oneOf("METRICS_EXPORTER", ["opentelemetry", "prometheus"] as const, {
        default: "opentelemetry",
        doc: "push over OTLP/HTTP, or serve Prometheus text",
      }),
      prometheusHost: r.string("OTEL_EXPORTER_PROMETHEUS_HOST", {
        noPrefix: true,
        default: "0.0.0.0",
        doc: "address of the Prometheus listener (paths / and /metrics)",
      }),
      prometheusPort: r.int("OTEL_EXPORTER_PROMETHEUS_PORT", {
        noPrefix: true,
        default: 9100,
        doc: "port of the Prometheus listener",
        min: 0,
        max: 65535,
      }),
    },
    otel: {
      resourceAttributes: Object.fromEntries(
        r.list("OTEL_RESOURCE_ATTRIBUTES", { noPrefix: true, doc: "k=v,k2=v2 resource attributes" })
          .map((kv) => kv.split("=").map((s) => s.trim()))
          .filter((p) => p.length === 2 && p[0]),
      ),
      env: otelEnv,
    },
    debug: r.bool("DEBUG", { noPrefix: true, doc: "report exporter problems" }),
  };
}

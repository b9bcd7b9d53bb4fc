/**
 * What tracing and metrics share: the resource (OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES, and `auth.version` by default), the OTLP/HTTP
 * exporter options read from the standard OTEL_EXPORTER_OTLP_* variables, and
 * DEBUG=true routing the SDK's own diagnostics (exporter failures) to the log.
 */
import { diag, DiagLogLevel } from "../../deps.ts";
import { type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import type { Config } from "../config/mod.ts";
import { NAME, VERSION } from "../version.ts";
import type { Logger } from "./log.ts";

/** The telemetry resource of this server. */
export function otelResource(config: Config): Resource {
  return resourceFromAttributes({
    "service.name": config.otel.env.OTEL_SERVICE_NAME || NAME,
    "service.version": VERSION,
    "auth.version": VERSION,
    ...config.otel.resourceAttributes,
  });
}

/** OTLP/HTTP exporter options for one signal (`traces` or `metrics`). */
export interface OtlpOptions {
  protocol: "http/json" | "http/protobuf";
  url: string;
  headers: Record<string, string>;
  timeoutMillis: number;
}

function parseHeaders(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(",")) {
    const i = part.indexOf("=");
    if (i <= 0) continue;
    try {
      out[decodeURIComponent(part.slice(0, i).trim())] = decodeURIComponent(
        part.slice(i + 1).trim(),
      );
    } catch { /* a malformed pair is skipped */ }
  }
  return out;
}

/**
 * Reads the standard variables: OTEL_EXPORTER_OTLP_{,TRACES_,METRICS_}ENDPOINT,
 * _PROTOCOL (http/protobuf by default, http/json; grpc is not supported and
 * falls back to http/protobuf with a warning), _HEADERS and _TIMEOUT.
 */
export function otlpOptions(
  config: Config,
  signal: "traces" | "metrics",
  log: Logger,
): OtlpOptions {
  const env = config.otel.env;
  const S = signal.toUpperCase();
  const pick = (name: string) =>
    env[`OTEL_EXPORTER_OTLP_${S}_${name}`] ?? env[`OTEL_EXPORTER_OTLP_${name}`];
  let protocol = pick("PROTOCOL") ?? "http/protobuf";
  if (protocol !== "http/json" && protocol !== "http/protobuf") {
    log.warn("unsupported OTLP protocol, using http/protobuf", { protocol, signal });
    protocol = "http/protobuf";
  }
  const own = env[`OTEL_EXPORTER_OTLP_${S}_ENDPOINT`];
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "http://localhost:4318";
  const url = own ?? `${base.replace(/\/+$/, "")}/v1/${signal}`;
  const timeout = Number(pick("TIMEOUT") ?? 10000);
  return {
    protocol: protocol as OtlpOptions["protocol"],
    url,
    headers: parseHeaders(pick("HEADERS") ?? ""),
    timeoutMillis: Number.isFinite(timeout) && timeout > 0 ? timeout : 10000,
  };
}

/** A positive integer from an OTEL_* variable, or `def`. */
export function otelInt(config: Config, name: string, def: number): number {
  const n = Number(config.otel.env[name]);
  return Number.isInteger(n) && n > 0 ? n : def;
}

/**
 * With DEBUG=true the SDK's diagnostics (failed exports, dropped spans) become
 * warn lines of the server log; otherwise they are silent. Process-wide, like
 * the SDK's diag logger itself.
 */
export function setupDiagnostics(config: Config, log: Logger): void {
  if (!config.debug) return;
  const line = (level: string) => (message: string, ...args: unknown[]) =>
    log.warn("telemetry diagnostics", {
      level,
      message,
      detail: args.length
        ? args.map((a) => a instanceof Error ? a.message : String(a)).join(" ")
        : undefined,
    });
  diag.setLogger({
    error: line("error"),
    warn: line("warn"),
    info: line("info"),
    debug: line("debug"),
    verbose: line("verbose"),
  }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}

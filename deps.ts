/**
 * The one place where third-party modules enter the server (re-exports).
 * The OAuth client library (`mod.ts`, `client/`) uses none: it runs on web
 * standards only, so it works unchanged in Deno, Node and browsers.
 * Test-only peers (SMTP server, mail parser, OpenID provider, auth-js) are
 * re-exported by `tests/helpers/deps.ts`.
 */
export { Hono } from "hono";
export type { Context, MiddlewareHandler } from "hono";
export { HTTPException } from "hono/http-exception";
export * as jose from "jose";
export { default as postgres } from "postgres";
export { PGlite } from "@electric-sql/pglite";
export { default as nodemailer } from "nodemailer";
export { parse } from "dotenv";
export { argon2Verify, bcrypt, bcryptVerify } from "hash-wasm";
export { default as QRCode } from "qrcode";
export {
  context as otelContext,
  diag,
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
export type { Attributes, Meter, Span, Tracer } from "@opentelemetry/api";
export { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
export { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
export { resourceFromAttributes } from "@opentelemetry/resources";
export type { Resource } from "@opentelemetry/resources";
export { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
export { OTLPTraceExporter as OTLPTraceExporterJson } from "@opentelemetry/exporter-trace-otlp-http";
export { OTLPTraceExporter as OTLPTraceExporterProto } from "@opentelemetry/exporter-trace-otlp-proto";
export { OTLPMetricExporter as OTLPMetricExporterJson } from "@opentelemetry/exporter-metrics-otlp-http";
export { OTLPMetricExporter as OTLPMetricExporterProto } from "@opentelemetry/exporter-metrics-otlp-proto";

/**
 * The third-party modules every server start loads (re-exports). The others
 * are imported where they are used, by modules that are themselves loaded
 * with a dynamic `import()` only when needed, so an unused one never loads:
 * the PGlite driver (db/pglite.ts, without DATABASE_URL), nodemailer
 * (mail/mailer.ts, with SMTP_HOST), the OpenTelemetry SDK and its exporters
 * (observe/, with TRACING_ENABLED or METRICS_ENABLED, and only the chosen
 * exporter), the QR code encoder (auth/qr.ts, at a TOTP enrollment), and
 * hash-wasm (auth/bcrypt_worker.ts, in the password workers). deno.json pins
 * every version.
 *
 * The OAuth client library (`mod.ts`, `client/`) uses none: it runs on web
 * standards only, so it works unchanged in Deno, Node and browsers.
 * Test-only peers (SMTP server, mail parser, OpenID provider, auth-js) are
 * re-exported by `tests/helpers/deps.ts`.
 */
export { Hono } from "hono";
export type { Context, MiddlewareHandler } from "hono";
export { HTTPException } from "hono/http-exception";
export * as jose from "jose";
export { parse } from "dotenv";
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

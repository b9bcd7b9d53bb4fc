/**
 * JSON-lines logger with GoTrue's levels (panic, fatal, error, warn, info,
 * debug). `child(fields)` adds fields (request id, route) to every line.
 * Writes to stdout, or appends to LOG_FILE. Never pass secrets, tokens,
 * passwords or codes as fields: `redact` below drops known secret keys as a
 * second line of defence.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { LogLevel } from "../config/mod.ts";

/** What is known about the request being handled (see observe/request.ts). */
export interface RequestStore {
  requestId: string;
  /** Extra per-request state of the observers (the request's span). */
  [key: string]: unknown;
}

/**
 * The request being handled, carried through every await of its handler, so
 * each log line (and each child span) of a request finds its request id
 * without the handler passing it around.
 */
export const requestStore: AsyncLocalStorage<RequestStore> = new AsyncLocalStorage<RequestStore>();

const RANK: Record<LogLevel, number> = { panic: 0, fatal: 1, error: 2, warn: 3, info: 4, debug: 5 };

const SECRET_KEY =
  /pass(word)?|secret|token|code|nonce|otp|authorization|cookie|assertion|api_?key|verifier/i;

/** Replaces the values of secret-looking keys, deeply. */
export function redact(v: unknown, depth = 0): unknown {
  if (depth > 6 || v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map((x) => redact(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    out[k] = SECRET_KEY.test(k) && k !== "error_code" && k !== "status_code"
      ? "[REDACTED]"
      : redact(x, depth + 1);
  }
  return out;
}

/**
 * `Name: message`, followed by its causes (`<- Name: message`, at most five),
 * so a log line shows what went wrong underneath.
 */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 6 && e !== undefined; i++) {
    parts.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(" <- ");
}

/** Where log lines go. */
export type LogSink = (line: string) => void;

/** A structured logger. */
export class Logger {
  constructor(
    readonly level: LogLevel = "info",
    readonly sink: LogSink = (l) => console.log(l),
    readonly fields: Record<string, unknown> = {},
  ) {}

  /** A logger whose lines carry `fields` too. */
  child(fields: Record<string, unknown>): Logger {
    return new Logger(this.level, this.sink, { ...this.fields, ...fields });
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] <= RANK[this.level];
  }

  log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
    if (!this.enabled(level)) return;
    const line = {
      level,
      msg,
      time: new Date().toISOString(),
      ...(requestStore.getStore()?.requestId
        ? { request_id: requestStore.getStore()!.requestId }
        : {}),
      ...this.fields,
      ...(redact(fields) as object),
    };
    this.sink(JSON.stringify(line));
  }

  error(msg: string, fields?: Record<string, unknown>): void {
    this.log("error", msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.log("warn", msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.log("info", msg, fields);
  }
  debug(msg: string, fields?: Record<string, unknown>): void {
    this.log("debug", msg, fields);
  }
}

/** A sink appending to a file (LOG_FILE), synchronously so lines keep their order. */
export function fileSink(path: string): LogSink {
  const file = Deno.openSync(path, { append: true, create: true });
  const enc = new TextEncoder();
  return (line) => {
    file.writeSync(enc.encode(line + "\n"));
  };
}

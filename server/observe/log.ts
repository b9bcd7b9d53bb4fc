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

/**
 * Where log lines go: a call writes the line at once. A sink may also `defer` a line (the
 * access log's): it is kept in a buffer written out within a few milliseconds, at the next
 * immediate line (order is kept), when the buffer is full, or at `flush` (the app's close).
 */
export type LogSink = ((line: string) => void) & {
  defer?: (line: string) => void;
  flush?: () => void;
};

/** A structured logger. */
export class Logger {
  constructor(
    readonly level: LogLevel = "info",
    readonly sink: LogSink = stdoutSink(),
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

  /**
   * The writer of one route's access log lines (observe/request.ts), or null below
   * LOG_LEVEL info: the line of `log.info("request", {method, route, status, duration_ms,
   * remote_addr})` with the request id, its constant parts joined once, no object built per
   * request, and written through the sink's buffer.
   */
  accessLine(
    route: string,
  ): ((requestId: string, method: string, status: number, ms: number, ip: string) => void) | null {
    if (!this.enabled("info")) return null;
    const own = JSON.stringify(redact(this.fields));
    const fields = own === "{}" ? "" : `,${own.slice(1, -1)}`;
    const routePart = `,"route":${JSON.stringify(route)},"status":`;
    const write = this.sink.defer ?? this.sink;
    return (requestId, method, status, ms, ip) => {
      const id = requestId ? `,"request_id":${JSON.stringify(requestId)}` : "";
      write(
        `{"level":"info","msg":"request","time":"${
          new Date().toISOString()
        }"${id}${fields},"method":${JSON.stringify(method)}${routePart}${status},"duration_ms":${
          Math.round(ms * 100) / 100
        },"remote_addr":${JSON.stringify(ip)}}`,
      );
    };
  }

  /** Writes out the lines the sink keeps in its buffer. */
  flush(): void {
    this.sink.flush?.();
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
  return bufferedSink((bytes) => file.writeSync(bytes));
}

let stdout: LogSink | undefined;

/** The process's standard output as a sink (one for the process: one buffer, one order). */
export function stdoutSink(): LogSink {
  return stdout ??= bufferedSink((bytes) => Deno.stdout.writeSync(bytes));
}

/** Deferred lines are written out after this long at most, or once this many characters wait. */
const DEFER_MS = 20;
const DEFER_CHARS = 64 * 1024;

/**
 * A sink over `write` (a synchronous write that may take part of its bytes): a line is written
 * at once, after the deferred ones before it; deferred lines wait in one string, written
 * together by a timer that does not keep the process alive, and at its exit.
 */
function bufferedSink(write: (bytes: Uint8Array) => number): LogSink {
  const enc = new TextEncoder();
  let pending = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const out = (text: string) => {
    let bytes = enc.encode(text);
    try {
      while (bytes.length > 0) bytes = bytes.subarray(write(bytes));
    } catch {
      /* a closed output (a gone terminal, a full disk) loses its lines, not the request */
    }
  };
  const flush = () => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (pending === "") return;
    const text = pending;
    pending = "";
    out(text);
  };
  const sink: LogSink = (line) => {
    flush();
    out(line + "\n");
  };
  sink.defer = (line) => {
    pending += line + "\n";
    if (pending.length >= DEFER_CHARS) flush();
    else if (timer === undefined) {
      const t = setTimeout(flush, DEFER_MS);
      Deno.unrefTimer(t);
      timer = t;
    }
  };
  sink.flush = flush;
  globalThis.addEventListener("unload", flush);
  return sink;
}

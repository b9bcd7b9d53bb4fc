/**
 * The two kinds of failure of the PostgreSQL client: the server refused a
 * statement (PgError, with its SQLSTATE and fields), or the connection is
 * gone or could not be made (PgConnectionError).
 */

/** Field codes of ErrorResponse and the names they are exposed under. */
const FIELDS: Record<string, string> = {
  S: "severity_local",
  V: "severity",
  C: "code",
  M: "message",
  D: "detail",
  H: "hint",
  P: "position",
  p: "internal_position",
  q: "internal_query",
  W: "where",
  s: "schema_name",
  t: "table_name",
  c: "column_name",
  d: "data_type_name",
  n: "constraint_name",
  F: "file",
  L: "line",
  R: "routine",
};

/** An ErrorResponse from the server. */
export class PgError extends Error {
  /** SQLSTATE, e.g. 23505 for a unique violation. */
  code = "";
  severity = "";
  detail?: string;
  hint?: string;
  position?: string;
  schema_name?: string;
  table_name?: string;
  column_name?: string;
  constraint_name?: string;
  [field: string]: unknown;

  constructor(fields: Map<string, string>) {
    super(fields.get("M") ?? "PostgreSQL error");
    this.name = "PgError";
    for (const [k, v] of fields) {
      const name = FIELDS[k];
      if (name && name !== "message") (this as Record<string, unknown>)[name] = v;
    }
  }
}

/** Reads the fields of an ErrorResponse or NoticeResponse body. */
export function errorFields(buf: Uint8Array, start: number, end: number): Map<string, string> {
  const out = new Map<string, string>();
  const decoder = new TextDecoder();
  let at = start;
  while (at < end && buf[at] !== 0) {
    const code = String.fromCharCode(buf[at]);
    let stop = at + 1;
    while (stop < end && buf[stop] !== 0) stop++;
    out.set(code, decoder.decode(buf.subarray(at + 1, stop)));
    at = stop + 1;
  }
  return out;
}

/** The connection failed, closed, or could not be opened. */
export class PgConnectionError extends Error {
  /** CONNECTION_CLOSED, CONNECT_TIMEOUT, CONNECTION_REFUSED, TLS_REQUIRED, ... */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PgConnectionError";
    this.code = code;
  }
}

/** Why a query was given up before PostgreSQL answered it. */
export type AbortReason = "DEADLINE" | "CLIENT_GONE" | "POOL_TIMEOUT";

const ABORT_MESSAGES: Record<AbortReason, string> = {
  DEADLINE: "the statement was given up: the request's deadline passed",
  CLIENT_GONE: "the statement was given up: the client went away",
  POOL_TIMEOUT: "no database connection became free before the request's deadline",
};

/** A query given up by this client (the work it was for has ended); a CancelRequest stops it. */
export class PgAbortError extends Error {
  readonly code: AbortReason;

  constructor(code: AbortReason) {
    super(ABORT_MESSAGES[code]);
    this.name = "PgAbortError";
    this.code = code;
  }
}

/** The message of whatever was thrown. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

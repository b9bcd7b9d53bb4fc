/**
 * The one database interface the server uses. Two backends implement it with
 * the same SQL: PostgreSQL over postgres.js (`postgres.ts`) and embedded
 * PGlite (`pglite.ts`). Queries use `$1`-style parameters; table names are
 * written through `db.t("users")`, which adds the `DB_NAMESPACE` prefix.
 *
 * Values come back as the drivers give them: timestamptz as `Date`, jsonb as
 * objects, uuid as string. Avoid returning int8 (the drivers differ): cast
 * counts with `::int`.
 */

import { PgAbortError, PgConnectionError } from "./pg/errors.ts";

/** A row as returned by a query. */
export type Row = Record<string, unknown>;

/** Something that runs SQL: the pool, or one transaction. */
export interface Queryable {
  /** Runs one parameterised statement and returns its rows. */
  query<T = Row>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs several statements without parameters (migrations). */
  exec(text: string): Promise<void>;
}

/** The database. */
export interface Db extends Queryable {
  readonly kind: "postgres" | "pglite";
  /** Table prefix from DB_NAMESPACE: "" or "<ns>_". */
  readonly prefix: string;
  /** A table name with the namespace prefix. */
  t(name: string): string;
  /** Runs `fn` in one transaction (BEGIN/COMMIT, ROLLBACK on throw). */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs `fn` on one dedicated connection (session-level advisory locks). */
  withConnection<T>(fn: (conn: Queryable) => Promise<T>): Promise<T>;
  /** True when the database answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
  /** The connection pool's state and events, for metrics (PostgreSQL only). */
  readonly monitor?: DbPoolMonitor;
}

/** Why a database operation was given up. */
export type DbTimeoutReason = "deadline" | "client_gone" | "pool_timeout" | "statement_timeout";

/** What metrics read from a pool of connections. */
export interface DbPoolMonitor {
  /** Connections by state, the most there may be, and callers waiting for one. */
  stats(): { idle: number; used: number; max: number; pending: number };
  /** Told of every wait for a connection (seconds). */
  onWait: ((seconds: number) => void) | null;
  /** Told of every operation given up. */
  onTimeout: ((reason: DbTimeoutReason) => void) | null;
}

/** Default of DB_STATEMENT_TIMEOUT: PostgreSQL's statement_timeout for every connection. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5000;

/**
 * A statement ran out of time: PostgreSQL's statement_timeout cancelled it, or the request it
 * served reached its deadline or went away. The API answers 504 request_timeout.
 */
export class DbTimeoutError extends Error {
  constructor(readonly reason: DbTimeoutReason, cause: unknown) {
    super(
      `database timeout (${reason}): ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
    this.name = "DbTimeoutError";
  }
}

/** The database cannot be reached: the API answers 503. */
export class DbUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`database unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = "DbUnavailableError";
  }
}

/**
 * PostgreSQL gave up a transaction for another's sake: a deadlock (40P01) or a
 * serialization failure (40001). The work was rolled back, so running it again
 * is safe: `transaction` (and a statement outside one) is tried again up to
 * CONFLICT_RETRIES times; if it still fails, the API answers 409 `conflict`
 * (GoTrue's code) with Retry-After, never 500.
 */
export class DbConflictError extends Error {
  /** The SQLSTATE, so `sqlState()` still reads it. */
  readonly code: string;
  constructor(cause: unknown) {
    super(`database conflict: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = "DbConflictError";
    this.code = sqlState(cause) ?? "40001";
  }
}

/** How many times a transaction or statement PostgreSQL gave up (DbConflictError) is run again. */
export const CONFLICT_RETRIES = 2;

/**
 * Runs `fn` again when it fails with a DbConflictError, at most CONFLICT_RETRIES
 * times, after a few random milliseconds (the two sides of a deadlock should
 * not meet again in step).
 */
export async function retryConflicts<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof DbConflictError) || attempt >= CONFLICT_RETRIES) throw e;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
    }
  }
}

/** SQLSTATE of a driver error, when it has one. */
export function sqlState(e: unknown): string | undefined {
  const code = (e as { code?: unknown })?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** A unique constraint was violated (SQLSTATE 23505). */
export function isUniqueViolation(e: unknown): boolean {
  return sqlState(e) === "23505";
}

/** Turns connection-level failures into DbUnavailableError; SQL errors pass through. */
export function classifyDbError(e: unknown): unknown {
  if (
    e instanceof DbUnavailableError || e instanceof DbTimeoutError || e instanceof DbConflictError
  ) return e;
  if (e instanceof PgConnectionError) return new DbUnavailableError(e);
  if (e instanceof PgAbortError) {
    return new DbTimeoutError(
      e.code === "CLIENT_GONE"
        ? "client_gone"
        : e.code === "POOL_TIMEOUT"
        ? "pool_timeout"
        : "deadline",
      e,
    );
  }
  const code = sqlState(e);
  // 40P01 deadlock_detected, 40001 serialization_failure: rolled back, may be run again.
  if (code === "40P01" || code === "40001") return new DbConflictError(e);
  // 57014 query_canceled: statement_timeout, or a CancelRequest; 55P03 lock_timeout.
  if (code === "57014" || code === "55P03") return new DbTimeoutError("statement_timeout", e);
  // 08xxx connection exceptions, 57P01-57P03 admin shutdown / cannot connect now, 53300 too many connections
  if (code === undefined || code.startsWith("08") || code.startsWith("57P") || code === "53300") {
    // The node:net code travels too: a write racing a peer's close fails with EPIPE,
    // "This socket has been ended by the other party" (tests/reliability/faults_test.ts).
    const nodeCode = (e as { code?: unknown })?.code;
    const msg = `${e instanceof Error ? e.message : String(e)} ${
      typeof nodeCode === "string" ? nodeCode : ""
    }`;
    if (
      code !== undefined ||
      /ECONNREFUSED|ECONNRESET|CONNECT_TIMEOUT|CONNECTION_CLOSED|CONNECTION_ENDED|CONNECTION_DESTROYED|connection|Connection refused|EPIPE|terminat|ended by the other party|ERR_STREAM_DESTROYED/i
        .test(msg)
    ) return new DbUnavailableError(e);
  }
  return e;
}

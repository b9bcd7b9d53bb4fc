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

import { PgConnectionError } from "./pg/errors.ts";

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
  if (e instanceof DbUnavailableError) return e;
  if (e instanceof PgConnectionError) return new DbUnavailableError(e);
  const code = sqlState(e);
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

/** Opens the database the config names: PostgreSQL when a URL is set, PGlite otherwise. */
export async function openDb(opts: {
  url: string;
  dataDir: string;
  maxPoolSize: number;
  prefix: string;
  /** Warnings of the PostgreSQL client (credentials in clear). */
  warn?: (message: string) => void;
}): Promise<Db> {
  if (opts.url) {
    const { openPostgres } = await import("./postgres.ts");
    return openPostgres(opts.url, opts.maxPoolSize, opts.prefix, { warn: opts.warn });
  }
  const { openPglite } = await import("./pglite.ts");
  return await openPglite(opts.dataDir, opts.prefix);
}

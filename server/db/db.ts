/**
 * Opens the database: the interface and its errors are in interface.ts (the
 * backends import them from there, so no module imports its own opener).
 */
export * from "./interface.ts";
import type { Db } from "./interface.ts";

/** Opens the database the config names: PostgreSQL when a URL is set, PGlite otherwise. */
export async function openDb(opts: {
  url: string;
  dataDir: string;
  maxPoolSize: number;
  prefix: string;
  /** Warnings of the PostgreSQL client (credentials in clear). */
  warn?: (message: string) => void;
  /** PostgreSQL's statement_timeout (ms, 0: none) unless the URL sets one; default 5 s. */
  statementTimeoutMs?: number;
  /** Unnamed statements (transaction poolers) unless the URL says; default named. */
  unnamedStatements?: boolean;
}): Promise<Db> {
  if (opts.url) {
    const { openPostgres } = await import("./postgres.ts");
    return openPostgres(opts.url, opts.maxPoolSize, opts.prefix, {
      warn: opts.warn,
      statementTimeoutMs: opts.statementTimeoutMs,
      unnamedStatements: opts.unnamedStatements,
    });
  }
  const { openPglite } = await import("./pglite.ts");
  return await openPglite(opts.dataDir, opts.prefix);
}

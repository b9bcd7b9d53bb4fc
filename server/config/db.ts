/**
 * The database: PostgreSQL by DATABASE_URL, or embedded PGlite in a data
 * directory; the pool, timeouts, prepared statements and the table prefix.
 */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const DB_SECTION: SectionDoc = {
  title: "Database",
  about:
    "PostgreSQL or embedded PGlite, the pool, timeouts and poolers ([database.md](database.md)).",
};

/** PGlite's data directory (and the generated JWT secret's) when DB_DATA_DIR is unset. */
export const DEFAULT_DATA_DIR = "./.authsvc/data";

/** The database's settings. */
export interface DbConfig {
  driver: "postgres";
  /** PostgreSQL connection string; "" selects embedded PGlite. */
  url: string;
  dataDir: string;
  /** 0 means no limit of ours (the driver's pool is then sized generously). */
  maxPoolSize: number;
  /** Table prefix: "" or "<ns>_". */
  namespace: string;
  /** PostgreSQL's statement_timeout for every connection, ms; 0: none. */
  statementTimeoutMs: number;
  /** Unnamed statements, parsed on every execution (transaction poolers). */
  unnamedStatements: boolean;
}

export function readDb(r: ConfigReader): DbConfig {
  const driver = r.oneOf("DB_DRIVER", ["postgres"] as const, {
    default: "postgres",
    doc: "must be postgres",
  });
  const url = r.string("DATABASE_URL", {
    noPrefix: true,
    aliases: ["AUTHSVC_DB_DATABASE_URL"],
    doc: "PostgreSQL connection string; unset: embedded PGlite",
  });
  const dataDir = r.string("DB_DATA_DIR", {
    default: DEFAULT_DATA_DIR,
    doc: "PGlite data directory (when no DATABASE_URL); memory:// keeps it in memory",
  });
  const maxPoolSize = r.int("DB_MAX_POOL_SIZE", {
    default: 0,
    min: 0,
    doc: "PostgreSQL connections; 0 means unlimited",
  });
  const ns = r.string("DB_NAMESPACE", { doc: "prefix of every table name (<ns>_users)" });
  if (ns && !/^[a-z_][a-z0-9_]{0,30}$/.test(ns)) {
    r.problem(`AUTHSVC_DB_NAMESPACE: expected lower-case letters, digits and _, got "${ns}"`);
  }
  const statementTimeoutMs = r.seconds("DB_STATEMENT_TIMEOUT", {
    default: 5,
    doc: "PostgreSQL statement_timeout of every connection (DATABASE_URL's wins); 0: none",
  }) * 1000;
  const unnamedStatements = r.oneOf("DB_PREPARED_STATEMENTS", ["named", "unnamed"] as const, {
    default: "named",
    doc: "unnamed: no prepared statement outlives a transaction (PgBouncer, Supavisor)",
  }) === "unnamed";
  return {
    driver,
    url,
    dataDir,
    maxPoolSize,
    namespace: ns ? `${ns}_` : "",
    statementTimeoutMs,
    unnamedStatements,
  };
}

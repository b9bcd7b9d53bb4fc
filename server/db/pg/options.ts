/**
 * Connection options from a PostgreSQL connection string
 * (`postgres://user:password@host:port/database?sslmode=require`), with the
 * libpq environment variables (PGHOST, PGPORT, PGUSER, PGPASSWORD,
 * PGDATABASE) as fallbacks for what the string leaves out.
 *
 * Query parameters understood: `sslmode` (disable, allow, prefer, require,
 * verify-ca, verify-full), `sslrootcert` (a PEM file of trusted CAs),
 * `host` (a Unix socket directory such as /var/run/postgresql),
 * `application_name`, `options`, `connect_timeout` (seconds). Anything else
 * is refused by name, so a typo cannot silently turn TLS off.
 */

/** How TLS is used. */
export type SslMode = "disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full";

/** Everything a connection needs. */
export interface ConnectOptions {
  /** A host name, or an absolute path: the directory of a Unix socket. */
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  ssl: SslMode;
  /** A PEM file of the CAs to trust instead of the system's (sslrootcert). */
  sslRootCert?: string;
  /** Startup parameters sent to the server. */
  params: Record<string, string>;
  connectTimeoutMs: number;
}

const SSL_MODES: SslMode[] = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];
const KNOWN = new Set([
  "sslmode",
  "sslrootcert",
  "host",
  "port",
  "user",
  "password",
  "dbname",
  "application_name",
  "options",
  "connect_timeout",
]);

/** Parses `url`; throws a TypeError naming what is wrong (never echoing the password). */
export function parseConnectionString(
  url: string,
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): ConnectOptions {
  const scheme = /^postgres(ql)?:\/\//i;
  if (!scheme.test(url)) {
    throw new TypeError("DATABASE_URL must start with postgres:// or postgresql://");
  }
  let u: URL;
  try {
    // URL does not know the postgres scheme's authority rules; parse it as http, with "_"
    // standing in for a host left out (postgres:///db?host=/var/run/postgresql).
    const rest = url.replace(scheme, "");
    u = new URL(`http://${/^[/?]|^$/.test(rest) ? `_${rest}` : rest}`);
  } catch {
    throw new TypeError("DATABASE_URL is not a postgres://user:password@host:port/db URL");
  }
  const q = u.searchParams;
  for (const k of q.keys()) {
    if (!KNOWN.has(k)) throw new TypeError(`DATABASE_URL: unsupported parameter "${k}"`);
  }
  const ssl = (q.get("sslmode") ?? "disable") as SslMode;
  if (!SSL_MODES.includes(ssl)) {
    throw new TypeError(`DATABASE_URL: sslmode must be one of ${SSL_MODES.join(", ")}`);
  }
  const named = u.hostname === "_" ? "" : decodeURIComponent(u.hostname);
  const host = q.get("host") || named || env("PGHOST") || "localhost";
  const port = Number(q.get("port") || u.port || env("PGPORT") || 5432);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TypeError("DATABASE_URL: the port must be a number from 1 to 65535");
  }
  const user = q.get("user") || decodeURIComponent(u.username) || env("PGUSER") || "postgres";
  const password = q.get("password") ??
    (u.password ? decodeURIComponent(u.password) : env("PGPASSWORD") ?? "");
  const database = q.get("dbname") || decodeURIComponent(u.pathname.slice(1)) ||
    env("PGDATABASE") || user;
  const timeout = Number(q.get("connect_timeout") ?? 5);
  if (!(timeout > 0)) throw new TypeError("DATABASE_URL: connect_timeout must be positive");
  const params: Record<string, string> = {
    user,
    database,
    application_name: q.get("application_name") ?? "authsvc",
    client_encoding: "UTF8",
    // Dates are read back with `new Date(text)`: ISO output in UTC parses the same everywhere.
    DateStyle: "ISO, MDY",
    TimeZone: "UTC",
  };
  const options = q.get("options");
  if (options) params.options = options;
  return {
    host,
    port,
    user,
    password,
    database,
    ssl,
    sslRootCert: q.get("sslrootcert") || undefined,
    params,
    connectTimeoutMs: timeout * 1000,
  };
}

/**
 * Connection options from a PostgreSQL connection string
 * (`postgres://user:password@host:port/database?sslmode=require`), with
 * libpq's environment variables (PGHOST, PGPORT, PGUSER, PGPASSWORD,
 * PGDATABASE, PGSSLMODE, PGSSLROOTCERT, PGREQUIREAUTH, PGCONNECT_TIMEOUT,
 * PGAPPNAME) as fallbacks for what the string leaves out, and libpq's
 * defaults (sslmode=prefer).
 *
 * Query parameters understood: `sslmode` (disable, allow, prefer, require,
 * verify-ca, verify-full), `sslrootcert` (a PEM file of trusted CAs, or
 * `system`: the operating system's), `require_auth` (the authentication
 * methods the server may ask for), `host` (a Unix socket directory such as
 * /var/run/postgresql), `port`, `user`, `password`, `dbname`,
 * `application_name`, `options`, `connect_timeout` (seconds). Anything else
 * is refused by name, so a typo cannot silently turn TLS off.
 * docs/database.md describes each, and this client's own two:
 * `prepared_statements` (`named`, the default; `unnamed` for transaction
 * poolers such as PgBouncer) and `statement_timeout` (PostgreSQL's setting,
 * sent at startup: `5000`, `5s`, `0` for none).
 */

/** How TLS is used. */
export type SslMode = "disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full";

/** An authentication method as `require_auth` names it (libpq). */
export type AuthMethod = "password" | "md5" | "scram-sha-256" | "gss" | "sspi" | "none";

/**
 * The authentication methods the server may ask for (`require_auth`, libpq's meaning): `methods`
 * are the allowed ones, or with `negated` the forbidden ones. Unset: the default policy,
 * SCRAM-SHA-256 or no authentication anywhere, a clear-text or MD5 password only over a Unix
 * socket or a TLS connection whose certificate was verified (auth.ts).
 */
export interface RequireAuth {
  methods: ReadonlySet<AuthMethod>;
  negated: boolean;
}

/** Everything a connection needs. */
export interface ConnectOptions {
  /** A host name, or an absolute path: the directory of a Unix socket. */
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  ssl: SslMode;
  /** A PEM file of the CAs to trust (sslrootcert), or "system" for the operating system's. */
  sslRootCert?: string;
  /** require_auth, or null for the default policy (see RequireAuth). */
  requireAuth: RequireAuth | null;
  /** Startup parameters sent to the server. */
  params: Record<string, string>;
  connectTimeoutMs: number;
  /**
   * Told once when credentials would travel unencrypted to a host other than this machine
   * (the server logs it as a warning). Default: a line on stderr.
   */
  warn?: (message: string) => void;
  /** Unnamed statements only, parsed on every execution (transaction poolers); unset: from the settings. */
  unnamedStatements?: boolean;
}

const SSL_MODES: SslMode[] = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];
const AUTH_METHODS: AuthMethod[] = ["password", "md5", "scram-sha-256", "gss", "sspi", "none"];
const KNOWN = new Set([
  "sslmode",
  "sslrootcert",
  "require_auth",
  "host",
  "port",
  "user",
  "password",
  "dbname",
  "application_name",
  "options",
  "connect_timeout",
  "prepared_statements",
  "statement_timeout",
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
  // A parameter of the string, else its environment variable (libpq's order).
  const setting = (name: string, variable: string) => q.get(name) || env(variable) || undefined;
  const sslRootCert = setting("sslrootcert", "PGSSLROOTCERT");
  const sslSetting = setting("sslmode", "PGSSLMODE");
  // libpq 16: sslrootcert=system makes verify-full the default and refuses anything weaker.
  const ssl = (sslSetting ?? (sslRootCert === "system" ? "verify-full" : "prefer")) as SslMode;
  if (!SSL_MODES.includes(ssl)) {
    throw new TypeError(`DATABASE_URL: sslmode must be one of ${SSL_MODES.join(", ")}`);
  }
  if (sslRootCert === "system" && ssl !== "verify-full") {
    throw new TypeError(
      `DATABASE_URL: sslrootcert=system needs sslmode=verify-full (sslmode is ${ssl})`,
    );
  }
  const named = u.hostname === "_" ? "" : decodeURIComponent(u.hostname);
  const host = q.get("host") || named || env("PGHOST") || "localhost";
  if (host.includes(",")) {
    throw new TypeError("DATABASE_URL: several hosts are not supported; name one host");
  }
  const port = Number(q.get("port") || u.port || env("PGPORT") || 5432);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TypeError("DATABASE_URL: the port must be a number from 1 to 65535");
  }
  const user = q.get("user") || decodeURIComponent(u.username) || env("PGUSER") || "postgres";
  const password = q.get("password") ??
    (u.password ? decodeURIComponent(u.password) : env("PGPASSWORD") ?? "");
  const database = q.get("dbname") || decodeURIComponent(u.pathname.slice(1)) ||
    env("PGDATABASE") || user;
  const timeout = Number(setting("connect_timeout", "PGCONNECT_TIMEOUT") ?? 5);
  if (!(timeout > 0)) {
    throw new TypeError("DATABASE_URL: connect_timeout must be a positive number of seconds");
  }
  const params: Record<string, string> = {
    user,
    database,
    application_name: q.get("application_name") ?? env("PGAPPNAME") ?? "authsvc",
    client_encoding: "UTF8",
    // Dates are read back with `new Date(text)`: ISO output in UTC parses the same everywhere.
    DateStyle: "ISO, MDY",
    TimeZone: "UTC",
  };
  const options = q.get("options");
  if (options) params.options = options;
  const prepared = q.get("prepared_statements");
  if (prepared !== null && prepared !== "named" && prepared !== "unnamed") {
    throw new TypeError("DATABASE_URL: prepared_statements must be named or unnamed");
  }
  const statementTimeout = q.get("statement_timeout");
  if (statementTimeout !== null) {
    if (!/^\d+(ms|s|min)?$/.test(statementTimeout)) {
      throw new TypeError(
        'DATABASE_URL: statement_timeout must be milliseconds or a duration such as "5s"',
      );
    }
    params.statement_timeout = statementTimeout;
  }
  return {
    host,
    port,
    user,
    password,
    database,
    ssl,
    sslRootCert,
    requireAuth: parseRequireAuth(setting("require_auth", "PGREQUIREAUTH")),
    params,
    connectTimeoutMs: timeout * 1000,
    unnamedStatements: prepared === null ? undefined : prepared === "unnamed",
  };
}

/** `require_auth`: a comma-separated list of methods, all plain or all negated with "!". */
export function parseRequireAuth(value: string | undefined): RequireAuth | null {
  if (value === undefined || value === "") return null;
  const methods = new Set<AuthMethod>();
  let negated: boolean | null = null;
  for (const raw of value.split(",")) {
    const item = raw.trim();
    const neg = item.startsWith("!");
    const name = (neg ? item.slice(1) : item) as AuthMethod;
    if (!AUTH_METHODS.includes(name)) {
      throw new TypeError(
        `DATABASE_URL: require_auth: unknown method "${name}" (known: ${AUTH_METHODS.join(", ")})`,
      );
    }
    if (negated !== null && neg !== negated) {
      throw new TypeError(
        "DATABASE_URL: require_auth: negated (!) and plain methods cannot be mixed",
      );
    }
    if (methods.has(name)) {
      throw new TypeError(`DATABASE_URL: require_auth: "${name}" is listed twice`);
    }
    negated = neg;
    methods.add(name);
  }
  return { methods, negated: negated ?? false };
}

/** Whether `host` is this machine: a Unix socket directory, localhost or a loopback address. */
export function isLocalHost(host: string): boolean {
  return host.startsWith("/") || host === "localhost" || /^127\.\d+\.\d+\.\d+$/.test(host) ||
    host === "::1" || host === "[::1]";
}

/** The server as messages name it: the socket directory, or host:port. */
export function where(opts: ConnectOptions): string {
  return opts.host.startsWith("/") ? opts.host : `${opts.host}:${opts.port}`;
}

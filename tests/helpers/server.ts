/**
 * Builds a real server for a test: the production config reader, the real
 * database (PostgreSQL when DATABASE_URL is set, in a fresh DB_NAMESPACE that
 * is dropped at close; otherwise one embedded PGlite per test process, also in
 * a fresh namespace), all migrations, and Deno.serve on 127.0.0.1 port 0.
 *
 *   const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
 *   const res = await fetch(`${srv.url}/signup`, {...});
 *   await srv.close();
 */
import { type App, createApp } from "../../server/app.ts";
import { type Config, readConfig } from "../../server/config/mod.ts";
import { type Db, openDb } from "../../server/db/db.ts";
import { dropNamespaceObjects } from "./bench_process.ts";
import type { Clock } from "../../server/auth/clock.ts";
import { Logger } from "../../server/observe/log.ts";
import type { Services } from "../../server/services.ts";
import { call } from "./http.ts";

/** The JWT secret every test server uses. */
export const TEST_JWT_SECRET = "test-secret-that-is-long-enough-for-hs256-0123456789";

/** Settings every test server starts from; a test's overrides win. */
export const BASE_ENV: Record<string, string> = {
  AUTHSVC_SITE_URL: "http://localhost:3000",
  AUTHSVC_API_EXTERNAL_URL: "http://localhost:8081",
  AUTHSVC_DB_DRIVER: "postgres",
  AUTHSVC_JWT_SECRET: TEST_JWT_SECRET,
  AUTHSVC_SMTP_ADMIN_EMAIL: "admin@example.com",
  LOG_LEVEL: "error",
  // The machines running the tests can be slow and shared: the defaults (10 s, 5 s) are left to
  // production; the tests of the timeouts set their own (tests/server/db/timeouts_test.ts).
  AUTHSVC_API_MAX_REQUEST_DURATION: "60s",
  AUTHSVC_DB_STATEMENT_TIMEOUT: "30s",
  // No background cleanup: a test that moves its clock a day on would see rows vanish whenever a
  // pass happened to run. The cleanup's own tests run it themselves (tests/server/ops/cleanup_test.ts).
  AUTHSVC_CLEANUP_INTERVAL: "0",
};

/** A running test server. */
export interface TestServer {
  url: string;
  config: Config;
  app: App;
  services: Services;
  db: Db;
  /** Log lines the server wrote (JSON strings), for assertions about logging. */
  logs: string[];
  /** A service_role JWT for admin endpoints. */
  serviceRoleToken(): Promise<string>;
  /** fetch relative to the server's URL. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

let shared: Promise<Db> | undefined;

/** One PGlite per test process (opening one takes about a second). */
function sharedPglite(): Promise<Db> {
  shared ??= openDb({ url: "", dataDir: "memory://", maxPoolSize: 0, prefix: "" });
  return shared;
}

/** A random table prefix for one test server. */
export function freshNamespace(): string {
  return `t${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
}

/** Drops every table and function with the prefix (PostgreSQL test databases). */
export async function dropNamespace(db: Db, prefix: string): Promise<void> {
  await dropNamespaceObjects((text, params) => db.query(text, params), prefix);
}

/** The database URL tests use for PostgreSQL, or "" for PGlite. */
export function testDatabaseUrl(): string {
  return Deno.env.get("DATABASE_URL") ?? "";
}

/** Options of startTestServer. */
export interface TestServerOptions {
  clock?: Clock;
  /** Force a backend regardless of DATABASE_URL. */
  backend?: "pglite" | "postgres";
}

/** Starts a server with BASE_ENV plus `env`. */
export async function startTestServer(
  env: Record<string, string> = {},
  opts: TestServerOptions = {},
): Promise<TestServer> {
  const ns = freshNamespace();
  const backend = opts.backend ?? (testDatabaseUrl() ? "postgres" : "pglite");
  const url = backend === "postgres"
    ? (testDatabaseUrl() || "postgres://postgres@127.0.0.1:5432/test")
    : "";
  const { config } = readConfig({
    ...BASE_ENV,
    AUTHSVC_DB_NAMESPACE: ns,
    DATABASE_URL: url,
    ...env,
  });
  const logs: string[] = [];
  const log = new Logger(config.log.level, (l) => logs.push(l));
  let db: Db;
  let ownDb = false;
  if (backend === "postgres") {
    db = await openDb({
      url,
      dataDir: "",
      maxPoolSize: 5,
      prefix: config.db.namespace,
      statementTimeoutMs: config.db.statementTimeoutMs,
      unnamedStatements: config.db.unnamedStatements,
    });
    ownDb = true;
  } else {
    const base = await sharedPglite();
    db = { ...base, prefix: config.db.namespace, t: (n: string) => `${config.db.namespace}${n}` };
  }
  const app = await createApp(config, { db, clock: opts.clock, log });
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    (req, info) => app.fetch(req, (info.remoteAddr as Deno.NetAddr).hostname),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  return {
    url: base,
    config,
    app,
    services: app.services,
    db,
    logs,
    serviceRoleToken: () =>
      app.services.jwt.sign({
        role: "service_role",
        sub: "",
        iat: Math.floor(Date.now() / 1000),
        exp: Math.floor(Date.now() / 1000) + 3600,
      }),
    fetch: (path, init) => fetch(`${base}${path}`, init),
    async close() {
      ac.abort();
      await server.finished;
      await app.close();
      if (ownDb) {
        await dropNamespace(db, config.db.namespace).catch(() => {});
        await db.close();
      }
    },
  };
}

/** POSTs JSON and returns status, parsed body and headers (redirects followed). */
export async function postJson(
  srv: TestServer,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const r = await call(srv, "POST", path, { body, headers, redirect: "follow" });
  return { status: r.status, body: r.body, headers: r.headers };
}

/**
 * The PostgreSQL pool's metrics (DATABASE_URL): connections by state, the
 * pool's size, waits for a connection and statements given up, scraped over
 * HTTP from the Prometheus exporter and pushed over OTLP.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { startOtlpCollector } from "../../helpers/otlp_collector.ts";

import { lockedSession, PG_URL, release, waitingBackend } from "../db/_locks.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

const onPg = { ignore: !PG_URL };

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** The value of the sample whose name and labels match, or undefined. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const p of (m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[p[1]] = p[2];
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[4]);
  }
  return undefined;
}

Deno.test({
  name:
    "metrics (prometheus): PostgreSQL connections by state, pool size, connection waits and timeouts",
  ...onPg,
  fn: async () => {
    const port = freePort();
    const f = await lockedSession({
      AUTHSVC_METRICS_ENABLED: "true",
      AUTHSVC_METRICS_EXPORTER: "prometheus",
      OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
      OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
      AUTHSVC_API_MAX_REQUEST_DURATION: "2s",
      AUTHSVC_DB_STATEMENT_TIMEOUT: "0",
    });
    try {
      const scrape = async () => await (await fetch(`http://127.0.0.1:${port}/`)).text();
      const me = await call(f.srv, "GET", "/user", {
        headers: {
          authorization: `Bearer ${f.accessToken}`,
        },
      });
      assert.equal(me.status, 200);
      let text = await scrape();
      const count = (state: string) =>
        sample(text, "db_client_connection_count", {
          db_client_connection_state: state,
          db_client_connection_pool_name: "authsvc",
        });
      assert.ok(count("idle") !== undefined && count("used") !== undefined, text);
      assert.ok(count("idle")! + count("used")! >= 1, text);
      assert.equal(sample(text, "db_client_connection_max"), 5);
      assert.equal(sample(text, "db_client_connection_pending_requests"), 0);
      assert.equal(sample(text, "db_client_operation_timeouts_total"), undefined);

      // A refresh (a transaction) stuck on the session's row lock reaches its deadline.
      const stuck = call(f.srv, "POST", "/token?grant_type=refresh_token", {
        body: {
          refresh_token: f.refreshToken,
        },
      });
      await waitingBackend(f);
      text = await scrape();
      assert.ok(count("used")! >= 1, "the waiting transaction's connection is in use");
      assert.ok(sample(text, "db_client_connection_wait_time_count")! >= 1, text);
      assert.equal((await stuck).status, 504);
      text = await scrape();
      assert.equal(sample(text, "db_client_operation_timeouts_total", { reason: "deadline" }), 1);
    } finally {
      await release(f);
    }
  },
});

Deno.test({
  name: "metrics (opentelemetry): the PostgreSQL pool's metrics are pushed over OTLP",
  ...onPg,
  fn: async () => {
    const collector = startOtlpCollector();
    const srv = await startTestServer({
      AUTHSVC_METRICS_ENABLED: "true",
      AUTHSVC_METRICS_EXPORTER: "opentelemetry",
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${collector.url}/v1/metrics`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_METRIC_EXPORT_INTERVAL: "200",
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
    }, { backend: "postgres" });
    try {
      const up = await call(srv, "POST", "/signup", {
        body: { email: uniqueEmail("dbo"), password: "pw-123456" },
      });
      assert.equal(up.status, 200);
      await collector.waitFor(() =>
        collector.metrics.some((m) => m.name === "db.client.connection.count") &&
        collector.metrics.some((m) => m.name === "db.client.connection.wait_time")
      );
    } finally {
      await srv.close();
      await collector.close();
    }
    const names = new Set(collector.metrics.map((x) => x.name));
    for (const n of ["db.client.connection.max", "db.client.connection.pending_requests"]) {
      assert.ok(names.has(n), n);
    }
  },
});

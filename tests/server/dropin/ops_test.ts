/**
 * Operations conventions: Prometheus text also on /metrics (and still on /),
 * and the `healthcheck` subcommand containers use instead of curl.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { freePort, runServerCommand } from "../../helpers/process.ts";

Deno.test("Prometheus metrics are served on /metrics as well as on /", async () => {
  const port = freePort();
  const srv = await startTestServer({
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "prometheus",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
  });
  try {
    await (await srv.fetch("/health")).body?.cancel();
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(metrics.status, 200);
    const text = await metrics.text();
    assert.match(
      text,
      /http_server_request_duration_count\{[^}]*http_request_method="GET"/,
    );
    assert.match(text, /http_route="\/health"/);
    const root = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(root.status, 200);
    await root.body?.cancel();
    const other = await fetch(`http://127.0.0.1:${port}/other`);
    assert.equal(other.status, 404);
    await other.body?.cancel();
  } finally {
    await srv.close();
  }
});

Deno.test("healthcheck exits 0 for a healthy server and 1 when nothing answers", async () => {
  const srv = await startTestServer({});
  try {
    const port = new URL(srv.url).port;
    const ok = await runServerCommand(["healthcheck"], {
      PORT: port,
      AUTHSVC_API_HOST: "0.0.0.0", // a wildcard listen address is checked on the loopback
    });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`healthy: http://127\\.0\\.0\\.1:${port}/health`));
    const byUrl = await runServerCommand(["healthcheck", "--url", `${srv.url}/health`]);
    assert.equal(byUrl.code, 0, byUrl.stderr);
  } finally {
    await srv.close();
  }
  const down = await runServerCommand(["healthcheck"], { PORT: String(freePort()) });
  assert.equal(down.code, 1);
  assert.match(down.stderr, /unhealthy: http:\/\/127\.0\.0\.1:\d+\/health/);
});

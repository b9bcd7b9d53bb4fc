import assert from "node:assert/strict";
import { BASE_ENV, startTestServer } from "../../helpers/server.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { createApp } from "../../../server/app.ts";
import { Logger } from "../../../server/observe/log.ts";
import { startOtlpCollector } from "../../helpers/otlp_collector.ts";
import { VERSION } from "../../../server/version.ts";
import { startSmsFake } from "../../helpers/sms_fakes.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { scratchDb } from "./_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

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

Deno.test("metrics (prometheus): requests, sign-ups, sign-ins, refreshes, mail, SMS and runtime, scraped over HTTP", async () => {
  const port = freePort();
  const smtp = await startSmtp();
  const sms = await startSmsFake("vonage");
  const srv = await startTestServer({
    ...smtp.env,
    ...sms.env,
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "prometheus",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
    OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
  });
  try {
    for (let i = 0; i < 2; i++) await (await srv.fetch("/health")).body?.cancel();
    await (await srv.fetch("/no/such/route")).body?.cancel();
    const address = uniqueEmail("ops");
    const up = await call(srv, "POST", "/signup", {
      body: { email: address, password: "pw-123456" },
    });
    assert.equal(up.status, 200);
    const inn = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: address,
        password: "pw-123456",
      },
    });
    assert.equal(inn.status, 200);
    const ref = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: inn.body.refresh_token,
      },
    });
    assert.equal(ref.status, 200);
    // A magic-link mail, signed in with its code; an SMS code, signed in with it.
    assert.equal((await call(srv, "POST", "/otp", { body: { email: address } })).status, 200);
    const mail = await smtp.waitForMail(address);
    const byMail = await call(srv, "POST", "/verify", {
      body: {
        type: "email",
        email: address,
        token: mail.code,
      },
    });
    assert.equal(byMail.status, 200, JSON.stringify(byMail.body));
    const phone = "+15554440001";
    assert.equal((await call(srv, "POST", "/otp", { body: { phone } })).status, 200);
    const bySms = await call(srv, "POST", "/verify", {
      body: {
        type: "sms",
        phone,
        token: sms.lastCode(phone),
      },
    });
    assert.equal(bySms.status, 200, JSON.stringify(bySms.body));

    const res = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    const text = await res.text();
    const route = (r: string, status: string, method = "GET") => ({
      http_route: r,
      http_response_status_code: status,
      http_request_method: method,
    });
    assert.equal(sample(text, "http_server_requests_total", route("/health", "200")), 2);
    assert.equal(sample(text, "http_server_requests_total", route("unmatched", "404")), 1);
    assert.equal(
      sample(text, "http_server_request_duration_count", route("/token", "200", "POST")),
      2,
    );
    assert.equal(sample(text, "auth_signups_total", { method: "email" }), 1);
    assert.equal(sample(text, "auth_signups_total", { method: "phone" }), 1);
    assert.equal(sample(text, "auth_signins_total", { method: "password" }), 1);
    assert.equal(sample(text, "auth_signins_total", { method: "magiclink" }), 1);
    assert.equal(sample(text, "auth_signins_total", { method: "otp" }), 1);
    assert.equal(sample(text, "auth_token_refreshes_total"), 1);
    assert.equal(sample(text, "auth_mails_sent_total", { kind: "magic_link" }), 1);
    assert.equal(sample(text, "auth_sms_sent_total", { provider: "vonage" }), 1);
    assert.ok(sample(text, "auth_audit_entries_total", { action: "login" })! >= 1);
    assert.ok(sample(text, "process_runtime_memory_rss")! > 0);
    assert.ok(sample(text, "process_runtime_memory_heap_used")! > 0);
    assert.ok(sample(text, "process_uptime")! > 0);
    assert.notEqual(sample(text, "process_runtime_event_loop_lag"), undefined);
    assert.equal(
      sample(text, "target_info", { auth_version: VERSION, deployment_environment: "test" }),
      1,
    );

    const other = await fetch(`http://127.0.0.1:${port}/other`);
    await other.body?.cancel();
    assert.equal(other.status, 404);
  } finally {
    await srv.close();
    await smtp.close();
    await sms.close();
  }
  // The listener closes with the server.
  await assert.rejects(() => fetch(`http://127.0.0.1:${port}/`));
});

Deno.test("metrics (prometheus): fuzzed methods and paths do not grow the request label sets", async () => {
  const port = freePort();
  const srv = await startTestServer({
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "prometheus",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
  });
  /** The distinct label sets of the request counter. */
  const labelSets = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    return text.split("\n").filter((l) => l.startsWith("http_server_requests_total{"))
      .map((l) => l.slice(0, l.lastIndexOf(" ")));
  };
  try {
    // One of each kind first: an unknown method on an unknown path, an unknown path, a
    // parametrised route with a user id, a known method a route does not answer.
    const once = async (method: string, path: string) =>
      await (await srv.fetch(path, { method })).body?.cancel();
    const round = async (i: number) => {
      await once(`FUZZ${i}`, `/x/${crypto.randomUUID()}`);
      await once("GET", `/no/such/${i}/${crypto.randomUUID()}?q=${i}`);
      await once("GET", `/admin/users/${crypto.randomUUID()}`);
      await once("PATCH", `/signup/${i}`);
    };
    await round(0);
    const before = await labelSets();
    for (let i = 1; i <= 50; i++) await round(i);
    const after = await labelSets();
    assert.deepEqual(after, before);
    assert.ok(after.some((l) => l.includes('http_request_method="_OTHER"')), after.join("\n"));
    assert.ok(after.every((l) => !/FUZZ|no\/such|[0-9a-f]{8}-/.test(l)), after.join("\n"));
  } finally {
    await srv.close();
  }
});

Deno.test("metrics (prometheus): a port in use stops the start with a clear message", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { config } = readConfig({
    ...BASE_ENV,
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "prometheus",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: String((l.addr as Deno.NetAddr).port),
  });
  const scratch = await scratchDb();
  try {
    await assert.rejects(
      () => createApp(config, { db: scratch.db, log: new Logger("error", () => {}) }),
      /cannot serve Prometheus metrics on 127\.0\.0\.1:\d+ \(OTEL_EXPORTER_PROMETHEUS_HOST\/PORT\)/,
    );
  } finally {
    l.close();
    await scratch.close();
  }
});

Deno.test("metrics (opentelemetry): pushed over OTLP with the resource attributes", async () => {
  const collector = startOtlpCollector();
  const srv = await startTestServer({
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "opentelemetry",
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${collector.url}/v1/metrics`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_METRIC_EXPORT_INTERVAL: "200",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
  });
  try {
    await (await srv.fetch("/health")).body?.cancel();
    const address = uniqueEmail("ops");
    const up = await call(srv, "POST", "/signup", {
      body: { email: address, password: "pw-123456" },
    });
    assert.equal(up.status, 200);
    const ref = await call(srv, "POST", "/token?grant_type=refresh_token", {
      body: {
        refresh_token: up.body.refresh_token,
      },
    });
    assert.equal(ref.status, 200);
    await collector.waitFor(() =>
      collector.metrics.some((m) => m.name === "http.server.requests") &&
      collector.metrics.some((m) => m.name === "auth.token_refreshes")
    );
  } finally {
    await srv.close();
    await collector.close();
  }
  const m = collector.metrics.find((x) => x.name === "http.server.requests")!;
  assert.equal(m.resource["auth.version"], VERSION);
  const names = new Set(collector.metrics.map((x) => x.name));
  for (
    const n of [
      "http.server.request.duration",
      "auth.signups",
      "auth.audit_entries",
      "process.runtime.memory.rss",
      "process.uptime",
    ]
  ) {
    assert.ok(names.has(n), n);
  }
});

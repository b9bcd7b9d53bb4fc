import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { startOtlpCollector } from "../../helpers/otlp_collector.ts";
import { otelRoute } from "../../../server/observe/request.ts";
import { VERSION } from "../../../server/version.ts";
import { startFakeCaptcha } from "./_helpers.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

Deno.test("tracing: hono routes become OpenTelemetry routes", () => {
  assert.equal(otelRoute("/admin/users/:user_id"), "/admin/users/{user_id}");
  assert.equal(
    otelRoute("/admin/users/:user_id/factors/:factor_id"),
    "/admin/users/{user_id}/factors/{factor_id}",
  );
  assert.equal(otelRoute("/items/:id{[0-9]+}"), "/items/{id}");
  assert.equal(otelRoute("/health"), "/health");
});

for (const protocol of ["http/protobuf", "http/json"] as const) {
  Deno.test(`tracing (${protocol}): one span per request, database and HTTP calls as children`, async () => {
    const collector = startOtlpCollector();
    const captcha = startFakeCaptcha("hcaptcha", { secret: "s3cret", goodToken: "good" });
    const srv = await startTestServer({
      AUTHSVC_TRACING_ENABLED: "true",
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
      AUTHSVC_SECURITY_CAPTCHA_ENABLED: "true",
      AUTHSVC_SECURITY_CAPTCHA_SECRET: "s3cret",
      AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: captcha.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=ops",
      OTEL_SERVICE_NAME: "auth-under-test",
    });
    let userId = "";
    try {
      const health = await srv.fetch("/health");
      await health.body?.cancel();
      const up = await call(srv, "POST", "/signup", {
        body: {
          email: uniqueEmail("ops"),
          password: "pw-123456",
          captcha_token: "good",
        },
      });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      userId = (up.body.user as { id: string }).id;
      const got = await call(srv, "GET", `/admin/users/${userId}`, {
        headers: {
          authorization: `Bearer ${await srv.serviceRoleToken()}`,
        },
      });
      assert.equal(got.status, 200);
    } finally {
      await srv.close(); // flushes the batch
      await captcha.close();
    }
    try {
      await collector.waitFor(() =>
        collector.spans.some((s) => s.name === "GET /admin/users/{user_id}")
      );
      const expectedType = protocol === "http/json" ? "application/json" : "application/x-protobuf";
      assert.ok(collector.contentTypes.every((t) => t.startsWith(expectedType)));

      const byName = (n: string) => collector.spans.filter((s) => s.name === n);
      const [h] = byName("GET /health");
      assert.ok(h, "a span named by method and route (OpenTelemetry HTTP conventions)");
      assert.equal(h.attributes["url.path"], "/health");
      assert.equal(h.attributes["url.scheme"], "http");
      assert.equal(h.attributes["http.request.method"], "GET");
      assert.equal(h.attributes["http.route"], "/health");
      assert.equal(h.attributes["http.response.status_code"], 200);
      assert.equal(h.kind, 2, "server span");
      assert.equal(h.resource["auth.version"], VERSION);
      assert.equal(h.resource["deployment.environment"], "test");
      assert.equal(h.resource["service.name"], "auth-under-test");

      const [admin] = byName("GET /admin/users/{user_id}");
      assert.equal(admin.attributes["http.route"], "/admin/users/{user_id}");
      assert.equal(admin.attributes["http.route.params.user_id"], userId);
      const dbChildren = collector.spans.filter((s) =>
        s.parentSpanId === admin.spanId && s.attributes["db.system.name"] === "postgresql"
      );
      assert.ok(dbChildren.length >= 1, "database calls are child spans");
      assert.ok(dbChildren.every((s) => s.traceId === admin.traceId));
      assert.ok(String(dbChildren[0].attributes["db.query.text"]).includes("users"));

      const [signup] = byName("POST /signup");
      assert.equal(signup.attributes["http.request.method"], "POST");
      const http = collector.spans.filter((s) =>
        s.parentSpanId === signup.spanId && s.name === "POST"
      );
      assert.equal(http.length, 1, "the captcha call is a child span");
      assert.equal(http[0].attributes["server.address"], "127.0.0.1");
      assert.equal(http[0].attributes["http.response.status_code"], 200);
      assert.equal(http[0].attributes["url.full"], captcha.url);
      assert.ok(
        collector.spans.some((s) => s.parentSpanId === signup.spanId && /^INSERT /.test(s.name)),
        "the sign-up's INSERT is a child span",
      );
    } finally {
      await collector.close();
    }
  });
}

Deno.test("tracing: an incoming traceparent makes the request span its child", async () => {
  const collector = startOtlpCollector();
  const srv = await startTestServer({
    AUTHSVC_TRACING_ENABLED: "true",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
  });
  try {
    const res = await srv.fetch("/health", {
      headers: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
    });
    await res.body?.cancel();
  } finally {
    await srv.close();
  }
  try {
    await collector.waitFor(() => collector.spans.some((s) => s.name === "GET /health"));
    const span = collector.spans.find((s) => s.name === "GET /health")!;
    assert.equal(span.traceId, "0af7651916cd43dd8448eb211c80319c");
    assert.equal(span.parentSpanId, "b7ad6b7169203331");
  } finally {
    await collector.close();
  }
});

async function exportToNowhere(debug: boolean): Promise<Record<string, unknown>[]> {
  const srv = await startTestServer({
    AUTHSVC_TRACING_ENABLED: "true",
    LOG_LEVEL: "warn",
    DEBUG: String(debug),
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
    OTEL_EXPORTER_OTLP_TIMEOUT: "2000",
  });
  try {
    const res = await srv.fetch("/health");
    await res.body?.cancel();
  } finally {
    await srv.close();
  }
  return srv.logs.map((l) => JSON.parse(l));
}

const isTelemetryProblem = (l: Record<string, unknown>) =>
  l.msg === "telemetry diagnostics" || l.msg === "telemetry export problem";

Deno.test("tracing: DEBUG=true reports an exporter that cannot deliver; without it, silence", async () => {
  const loud = await exportToNowhere(true);
  const problem = loud.find(isTelemetryProblem);
  assert.ok(problem, `no exporter problem reported: ${JSON.stringify(loud)}`);
  assert.match(JSON.stringify(problem), /ECONNREFUSED|connect|export/i);
  const quiet = await exportToNowhere(false);
  assert.equal(quiet.filter(isTelemetryProblem).length, 0);
});

/** Spans exported by a server with `env`, after one /health request per traceparent (or none). */
async function sampledTraces(
  env: Record<string, string>,
  traceparents: (string | null)[],
): Promise<{ traceIds: string[]; logs: Record<string, unknown>[] }> {
  const collector = startOtlpCollector();
  const srv = await startTestServer({
    AUTHSVC_TRACING_ENABLED: "true",
    LOG_LEVEL: "warn",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
    ...env,
  });
  try {
    for (const tp of traceparents) {
      const res = await srv.fetch("/health", { headers: tp ? { traceparent: tp } : {} });
      await res.body?.cancel();
    }
  } finally {
    await srv.close(); // the exporter has delivered every sampled span when this resolves
    await collector.close();
  }
  return {
    traceIds: collector.spans.filter((s) => s.name === "GET /health").map((s) => s.traceId),
    logs: srv.logs.map((l) => JSON.parse(l)),
  };
}

const UNSAMPLED = "00-11111111111111111111111111111111-2222222222222222-00";
const SAMPLED = "00-33333333333333333333333333333333-4444444444444444-01";

Deno.test("tracing: OTEL_TRACES_SAMPLER and _ARG choose what is exported", async (t) => {
  await t.step(
    "default parentbased_always_on: follows the traceparent's sampled flag",
    async () => {
      const { traceIds } = await sampledTraces({}, [UNSAMPLED, SAMPLED, null]);
      assert.equal(traceIds.length, 2, JSON.stringify(traceIds));
      assert.ok(traceIds.includes("33333333333333333333333333333333"));
      assert.ok(!traceIds.includes("11111111111111111111111111111111"));
    },
  );
  await t.step("always_on: exports an unsampled parent's child too", async () => {
    const { traceIds } = await sampledTraces({ OTEL_TRACES_SAMPLER: "always_on" }, [UNSAMPLED]);
    assert.deepEqual(traceIds, ["11111111111111111111111111111111"]);
  });
  await t.step("traceidratio with ratio 0: exports nothing", async () => {
    const env = { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" };
    const { traceIds } = await sampledTraces(env, [SAMPLED, null]);
    assert.deepEqual(traceIds, []);
  });
  await t.step("an unknown sampler is named in a warning; the default applies", async () => {
    const { traceIds, logs } = await sampledTraces({ OTEL_TRACES_SAMPLER: "sometimes" }, [
      UNSAMPLED,
      null,
    ]);
    assert.equal(traceIds.length, 1);
    assert.ok(
      logs.some((l) => l.level === "warn" && /OTEL_TRACES_SAMPLER "sometimes"/.test(String(l.msg))),
      JSON.stringify(logs),
    );
  });
});

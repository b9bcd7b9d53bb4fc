/**
 * `deno task start`'s narrow permission set (-P=server in deno.json, no -A)
 * is enough for every feature: a PGlite data directory on disk, LOG_FILE,
 * SMTP, an SMS gateway, an external provider, OTLP trace export and the
 * Prometheus listener, all on in one server process.
 */
import assert from "node:assert/strict";
import { freePort, startServerProcess } from "../../helpers/process.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { startSmsFake } from "../../helpers/sms_fakes.ts";
import { startOtlpCollector } from "../../helpers/otlp_collector.ts";

Deno.test("with -P=server every feature works: data dir, LOG_FILE, SMTP, SMS, provider, OTLP, Prometheus", async () => {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-perms-" });
  const smtp = await startSmtp();
  const sms = await startSmsFake("twilio");
  const otlp = startOtlpCollector();
  const promPort = freePort();
  const logFile = `${dir}/server.log`;
  const p = await startServerProcess({
    ...smtp.env,
    ...sms.env,
    AUTHSVC_DB_DATA_DIR: `${dir}/data`,
    AUTHSVC_LOG_FILE: logFile,
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_EXTERNAL_GITHUB_ENABLED: "true",
    AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID: "gh-client",
    AUTHSVC_EXTERNAL_GITHUB_SECRET: "gh-secret",
    AUTHSVC_EXTERNAL_GITHUB_REDIRECT_URI: "http://localhost:8081/callback",
    AUTHSVC_TRACING_ENABLED: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "prometheus",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: String(promPort),
  });
  let stopped = false;
  try {
    const post = (path: string, body: unknown) =>
      fetch(`${p.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));

    const mailSignup = await post("/signup", {
      email: "perm@example.com",
      password: "secret-pw-1",
    });
    assert.equal(mailSignup.status, 200, JSON.stringify(mailSignup.body));
    const mail = await smtp.waitForMail("perm@example.com", { timeoutMs: 20_000 });
    assert.match(mail.subject, /Confirm/);

    const phoneSignup = await post("/signup", { phone: "+15551230000", password: "secret-pw-1" });
    assert.equal(phoneSignup.status, 200, JSON.stringify(phoneSignup.body));
    assert.ok(sms.lastCode("+15551230000"), "the SMS reached the gateway");

    const authorize = await fetch(`${p.url}/authorize?provider=github`, { redirect: "manual" });
    await authorize.body?.cancel();
    assert.equal(authorize.status, 302);
    assert.match(authorize.headers.get("location") ?? "", /client_id=gh-client/);

    const metrics = await fetch(`http://127.0.0.1:${promPort}/`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /http_server_requests_total\{[^}]*\/signup/);

    assert.equal(await p.stop(), 0); // the shutdown flushes the spans
    stopped = true;
    await otlp.waitFor(() => otlp.spans.some((s) => s.name.includes("/signup")), 20_000);

    const logged = await Deno.readTextFile(logFile);
    assert.match(logged, /"route":"\/signup"/);
    assert.ok((await Deno.stat(`${dir}/data`)).isDirectory);
    const output = [...p.stdout, ...p.stderr].join("\n");
    assert.doesNotMatch(output, /NotCapable|PermissionDenied|Requires \w+ access/);
    assert.doesNotMatch(logged, /NotCapable|PermissionDenied|Requires \w+ access/);
  } finally {
    if (!stopped) await p.stop("SIGKILL");
    await otlp.close();
    await sms.close();
    await smtp.close();
    await Deno.remove(dir, { recursive: true });
  }
});

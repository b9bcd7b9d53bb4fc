import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { parseIp, resolveClientIp } from "../../../server/security/client_ip.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { BASE_ENV } from "../../helpers/server.ts";
import { scratchDb } from "./_helpers.ts";
import { createApp } from "../../../server/app.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

type Line = Record<string, unknown>;
const parse = (lines: string[]): Line[] => lines.map((l) => JSON.parse(l));

Deno.test("request id: generated and echoed, or inherited from REQUEST_ID_HEADER", async () => {
  const srv = await startTestServer({ AUTHSVC_REQUEST_ID_HEADER: "X-Amzn-Trace-Id" });
  try {
    const a = await srv.fetch("/health");
    await a.body?.cancel();
    const b = await srv.fetch("/health");
    await b.body?.cancel();
    const idA = a.headers.get("x-request-id") ?? "";
    assert.match(idA, /^[0-9a-f-]{36}$/);
    assert.notEqual(idA, b.headers.get("x-request-id"));

    const inherited = await srv.fetch("/health", { headers: { "x-amzn-trace-id": "Root=1-abc" } });
    await inherited.body?.cancel();
    assert.equal(inherited.headers.get("x-request-id"), "Root=1-abc");

    const error = await srv.fetch("/no/such/route", { headers: { "x-amzn-trace-id": "req-42" } });
    await error.body?.cancel();
    assert.equal(error.status, 404);
    assert.equal(error.headers.get("x-request-id"), "req-42");
  } finally {
    await srv.close();
  }
});

Deno.test("logs: one JSON line per request, and the request id on every line of it", async () => {
  const srv = await startTestServer({ LOG_LEVEL: "debug", AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    srv.logs.length = 0;
    const r = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("ops"), password: "pw-123456" },
    });
    assert.equal(r.status, 200);
    const id = r.headers.get("x-request-id");
    const lines = parse(srv.logs);
    const access = lines.filter((l) => l.msg === "request");
    assert.equal(access.length, 1);
    assert.equal(access[0].method, "POST");
    assert.equal(access[0].route, "/signup");
    assert.equal(access[0].status, 200);
    assert.equal(typeof access[0].duration_ms, "number");
    assert.equal(access[0].request_id, id);
    assert.equal(access[0].level, "info");
    for (const l of lines) assert.equal(l.request_id, id, JSON.stringify(l));

    srv.logs.length = 0;
    const miss = await call(srv, "GET", "/nowhere/123");
    const line = parse(srv.logs).find((l) => l.msg === "request")!;
    assert.equal(line.status, 404);
    assert.equal(line.route, "unmatched");
    assert.equal(line.request_id, miss.headers.get("x-request-id"));
  } finally {
    await srv.close();
  }
});

Deno.test("logs: LOG_LEVEL drops lower levels; LOG_FILE receives the lines", async () => {
  const file = await Deno.makeTempFile({ suffix: ".log" });
  const { config } = readConfig({ ...BASE_ENV, LOG_LEVEL: "warn", AUTHSVC_LOG_FILE: file });
  assert.equal(config.log.file, file);
  const scratch = await scratchDb();
  const app = await createApp(config, { db: scratch.db });
  try {
    const res = await app.fetch(new Request("http://x/health"), "127.0.0.1");
    await res.body?.cancel();
    app.services.log.warn("something to note", { detail: "kept" });
    app.services.log.info("not at warn", {});
  } finally {
    await app.close();
    await scratch.close();
  }
  const lines = (await Deno.readTextFile(file)).trim().split("\n").map((l) => JSON.parse(l));
  await Deno.remove(file);
  assert.ok(lines.some((l) => l.msg === "something to note" && l.level === "warn"));
  assert.ok(!lines.some((l) => l.level === "info"), "info lines are dropped at warn");
});

Deno.test("client IP: the socket address, or the validated first Authsvc-Proxy-Forwarded-For", () => {
  const off = readConfig(BASE_ENV).config;
  const on = readConfig({ ...BASE_ENV, AUTHSVC_SECURITY_SB_FORWARDED_FOR_ENABLED: "true" }).config;
  const h = (v: string) => new Headers({ "Authsvc-Proxy-Forwarded-For": v });
  assert.equal(resolveClientIp(off, h("198.51.100.1"), "127.0.0.1"), "127.0.0.1");
  assert.equal(resolveClientIp(on, h("198.51.100.1, 10.0.0.1"), "127.0.0.1"), "198.51.100.1");
  assert.equal(resolveClientIp(on, h(" 2001:db8::5 ,10.0.0.1"), "127.0.0.1"), "2001:db8::5");
  assert.equal(resolveClientIp(on, h("[2001:db8::5]:443"), "127.0.0.1"), "2001:db8::5");
  assert.equal(resolveClientIp(on, h("not-an-ip"), "127.0.0.1"), "127.0.0.1");
  assert.equal(resolveClientIp(on, h("999.1.1.1"), "127.0.0.1"), "127.0.0.1");
  assert.equal(resolveClientIp(on, new Headers(), "::1"), "::1");
  assert.equal(parseIp("203.0.113.9:8080"), "203.0.113.9");
});

Deno.test("client IP: forwarded address lands in the access log and the audit log", async () => {
  const srv = await startTestServer({
    LOG_LEVEL: "info",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_SB_FORWARDED_FOR_ENABLED: "true",
  });
  try {
    srv.logs.length = 0;
    const r = await call(srv, "POST", "/signup", {
      body: { email: uniqueEmail("ops"), password: "pw-123456" },
      headers: {
        "authsvc-proxy-forwarded-for": "192.0.2.44, 10.1.1.1",
      },
    });
    assert.equal(r.status, 200);
    const line = parse(srv.logs).find((l) => l.msg === "request")!;
    assert.equal(line.remote_addr, "192.0.2.44");
    const rows = await srv.db.query<{ ip_address: string }>(
      `SELECT ip_address FROM ${srv.db.t("audit_log_entries")}`,
    );
    assert.ok(rows.length > 0);
    assert.ok(rows.every((x) => x.ip_address === "192.0.2.44"), JSON.stringify(rows));
  } finally {
    await srv.close();
  }
});

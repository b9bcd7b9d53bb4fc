/**
 * The one road (server/api/road.ts): every row of the route table is answered
 * by the function compiled from it, with the road's steps (request id, CORS,
 * the access log line) around the row's guards, on a plain server and on one
 * with tracing, metrics and the console on; a guard added to a row runs for
 * every request of that row (the refresh grant of POST /token, GET /user);
 * and no module besides the road answers a request.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startOtlpCollector } from "../../helpers/otlp_collector.ts";
import { type App, createApp } from "../../../server/app.ts";
import { type Route, ROUTES } from "../../../server/api/routes.ts";
import type { Guard } from "../../../server/api/guards.ts";
import { fileSink, Logger } from "../../../server/observe/log.ts";
import { otelRoute } from "../../../server/observe/request.ts";

const ORIGIN = "https://app.example.com";

/** The two kinds of server: nothing on, and tracing, metrics and the console on. */
const SETUPS: [string, (collector: string) => Record<string, string>][] = [
  ["plain", () => ({})],
  ["tracing, metrics and the console on", (collector) => ({
    AUTHSVC_TRACING_ENABLED: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: collector,
    OTEL_BSP_SCHEDULE_DELAY: "50",
    AUTHSVC_METRICS_ENABLED: "true",
    AUTHSVC_METRICS_EXPORTER: "prometheus",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: "0",
    AUTHSVC_CONSOLE_ENABLED: "true",
  })],
];

/** A server of `setup` whose app serves `routes`, its log lines kept. */
async function serverWith(
  setup: Record<string, string>,
  routes: readonly Route[],
): Promise<{ srv: TestServer; app: App; logs: string[]; close(): Promise<void> }> {
  const srv = await startTestServer({
    AUTHSVC_REQUEST_ID_HEADER: "X-Trace-Id",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    LOG_LEVEL: "info",
    ...setup,
  });
  const logs: string[] = [];
  const app = await createApp(srv.config, {
    db: srv.db,
    migrate: false,
    routes,
    log: new Logger("info", (l) => logs.push(l)),
  });
  return {
    srv,
    app,
    logs,
    async close() {
      await app.close();
      await srv.close();
    },
  };
}

/** A request as Deno.serve hands it over: with the Content-Length its client sent. */
function request(method: string, path: string, headers: Record<string, string>, body?: string) {
  const h = new Headers(headers);
  if (body !== undefined) h.set("content-length", String(new TextEncoder().encode(body).length));
  return new Request(`http://127.0.0.1:8081${path}`, { method, headers: h, body });
}

for (const [name, env] of SETUPS) {
  Deno.test(`every row is answered by its compiled function, on the road (${name})`, async () => {
    const collector = startOtlpCollector();
    // A probe first in every row: it answers with the row it was compiled into.
    const probed: Route[] = ROUTES.map(([method, path, guards, handler]) => {
      const probe: Guard = (c) => Promise.resolve(c.json({ row: `${method} ${path}` }));
      return [method, path, [probe, ...guards], handler];
    });
    const s = await serverWith(env(collector.url), probed);
    try {
      for (const [method, path] of ROUTES) {
        const concrete = path.replace(/:[a-z_]+/g, () => crypto.randomUUID());
        const id = `trace-${crypto.randomUUID()}`;
        const body = method === "GET" || method === "DELETE" ? undefined : "{}";
        const res = await s.app.fetch(
          request(
            method,
            `${concrete}?grant_type=refresh_token`,
            { origin: ORIGIN, "x-trace-id": id, "content-type": "application/json" },
            body,
          ),
          "127.0.0.1",
        );
        const what = `${method} ${path}`;
        assert.equal(res.status, 200, `${what}: ${await res.clone().text()}`);
        assert.deepEqual(await res.json(), { row: what });
        assert.equal(res.headers.get("x-request-id"), id, what);
        assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN, what);
        assert.equal(res.headers.get("access-control-allow-credentials"), "true", what);
        assert.equal(res.headers.get("vary"), "Origin", what);
        const line = s.logs.map((l) => JSON.parse(l)).find((l) =>
          l.msg === "request" && l.request_id === id
        );
        assert.ok(line, `${what}: an access log line`);
        assert.deepEqual(
          [line.method, line.route, line.status, line.remote_addr, typeof line.duration_ms],
          [method, otelRoute(path), 200, "127.0.0.1", "number"],
        );
      }
    } finally {
      await s.close();
      await collector.close();
    }
  });

  Deno.test(`a guard added to a row runs for each of its requests (${name})`, async () => {
    const collector = startOtlpCollector();
    const ran: string[] = [];
    const watch = (label: string): Guard => async (c, next) => {
      ran.push(`${label} ${c.req.query("grant_type") ?? ""}`.trim());
      await next();
    };
    const routes: Route[] = ROUTES.map(([method, path, guards, handler]) => {
      if (method === "POST" && path === "/token") {
        return [method, path, [...guards, watch("token")], handler];
      }
      if (method === "GET" && path === "/user") {
        return [method, path, [...guards, watch("user")], handler];
      }
      return [method, path, guards, handler];
    });
    const s = await serverWith(env(collector.url), routes);
    try {
      const json = { "content-type": "application/json" };
      const email = `road-${crypto.randomUUID().slice(0, 8)}@example.com`;
      const up = await s.app.fetch(
        request("POST", "/signup", json, JSON.stringify({ email, password: "secret-pw-1" })),
      );
      const session = await up.json();
      assert.equal(up.status, 200, JSON.stringify(session));

      const refresh = await s.app.fetch(
        request(
          "POST",
          "/token?grant_type=refresh_token",
          { ...json, origin: ORIGIN },
          JSON.stringify({ refresh_token: session.refresh_token }),
        ),
      );
      const rotated = await refresh.json();
      assert.equal(refresh.status, 200, JSON.stringify(rotated));
      assert.equal(refresh.headers.get("access-control-allow-origin"), ORIGIN);
      const pw = await s.app.fetch(
        request(
          "POST",
          "/token?grant_type=password",
          json,
          JSON.stringify({ email, password: "x" }),
        ),
      );
      await pw.body?.cancel();
      assert.equal(pw.status, 400);
      const user = await s.app.fetch(
        request("GET", "/user", { authorization: `Bearer ${rotated.access_token}` }),
      );
      assert.equal(user.status, 200, await user.clone().text());
      assert.equal((await user.json()).email, email);
      assert.deepEqual(ran, ["token refresh_token", "token password", "user"]);
    } finally {
      await s.close();
      await collector.close();
    }
  });
}

Deno.test("the /token row's limit counts the refresh grant, with the road's headers", async () => {
  const srv = await startTestServer({ AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "2/1h" });
  try {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let n = 0; n < 3; n++) {
      last = await srv.fetch("/token?grant_type=refresh_token", {
        method: "POST",
        headers: { "content-type": "application/json", origin: ORIGIN },
        body: JSON.stringify({ refresh_token: "unknown-token" }),
      });
      statuses.push(last.status);
      if (n < 2) await last.body?.cancel();
    }
    assert.deepEqual(statuses, [400, 400, 429]);
    assert.equal((await last!.json()).error_code, "over_request_rate_limit");
    assert.ok(last!.headers.get("retry-after"));
    assert.equal(last!.headers.get("access-control-allow-origin"), ORIGIN);
    assert.ok(last!.headers.get("x-request-id"));
  } finally {
    await srv.close();
  }
});

Deno.test("access log lines written to LOG_FILE are all there once the server closes", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/access.log`;
  const srv = await startTestServer({});
  const app = await createApp(srv.config, {
    db: srv.db,
    migrate: false,
    log: new Logger("info", fileSink(file)),
  });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await app.fetch(request("GET", i % 2 ? "/health" : "/nope", {}), "10.0.0.1");
      await res.body?.cancel();
      ids.push(res.headers.get("x-request-id")!);
    }
    await app.close();
    const lines = (await Deno.readTextFile(file)).trim().split("\n").map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.msg === "request");
    assert.deepEqual(requests.map((l) => l.request_id), ids, "every line, in order");
    assert.deepEqual(
      [requests[0].route, requests[0].status, requests[1].route, requests[1].status],
      ["unmatched", 404, "/health", 200],
    );
    assert.equal(requests[0].remote_addr, "10.0.0.1");
    assert.equal(requests[0].level, "info");
  } finally {
    await app.close();
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** `text` without its comments (block comments and whole-line `//` ones). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/** Every .ts file under `dir`, with its code. */
async function sources(dir: URL): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for await (const e of Deno.readDir(dir)) {
    const url = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
    if (e.isDirectory) out.push(...await sources(url));
    else if (e.name.endsWith(".ts")) out.push([url.pathname, code(await Deno.readTextFile(url))]);
  }
  return out;
}

Deno.test("nothing but the road answers a request", async () => {
  const root = new URL("../../../server/", import.meta.url);
  const files = await sources(root);
  const rel = (p: string) => p.slice(root.pathname.length);
  const where = (re: RegExp) => files.filter(([, text]) => re.test(text)).map(([p]) => rel(p));
  // The one Hono app, built in app.ts, whose every row is compiled by the road (routes.ts).
  assert.deepEqual(where(/new Hono\b/), ["app.ts"]);
  assert.deepEqual(where(/\bapp\.on\(/).sort(), ["api/routes.ts", "console/routes.ts"]);
  assert.deepEqual(where(/\bapp\.(notFound|use)\(/).sort(), ["app.ts", "console/routes.ts"]);
  // Listeners: the server's own (main.ts) and Prometheus's on its own port (metrics.ts).
  assert.deepEqual(where(/Deno\.serve\(/).sort(), ["main.ts", "observe/metrics.ts"]);
  assert.ok(!files.some(([p]) => /lane/i.test(rel(p))), "no lane module");
  // Every row goes through road.row; the console's routes through its mount, first.
  const routes = files.find(([p]) => rel(p) === "api/routes.ts")![1];
  assert.match(routes, /app\.on\(method, \[path\], road\.row\(path, guards, handler\)\)/);
  const app = files.find(([p]) => rel(p) === "app.ts")![1];
  assert.ok(
    app.indexOf('app.use("/console/*", road.mount())') < app.indexOf("consoleRoutes(app"),
    "the console's mount before its routes",
  );
});

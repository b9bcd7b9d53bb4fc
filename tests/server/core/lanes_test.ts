/**
 * The lanes past hono (server/api/lanes.ts), POST /token?grant_type=refresh_token
 * and GET /user, answer as the route table does: the same requests go to a
 * server with the lanes and to one without them (`lanes: false`) on the same
 * database, and the statuses, the headers and the bodies must match (success,
 * every error the path can give, CORS, an inherited request id, the rate
 * limit, the body-size limit, form bodies, a kept GET /user answer), with the
 * access log line alike. Requests a lane cannot answer alike go to hono
 * (`laneOf`).
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { type App, createApp } from "../../../server/app.ts";
import { laneOf } from "../../../server/api/lanes.ts";
import { Logger } from "../../../server/observe/log.ts";

const PATH = "/token?grant_type=refresh_token";

interface Answer {
  status: number;
  headers: [string, string][];
  text: string;
  requestId: string | null;
}

/** A request as Deno.serve hands it over: with the Content-Length its client sent. */
function request(path: string, init: RequestInit = {}): Request {
  const body = init.body as string | Uint8Array | undefined;
  const headers = new Headers(init.headers);
  if (body !== undefined && !(body instanceof ReadableStream)) {
    const n = typeof body === "string" ? new TextEncoder().encode(body).length : body.length;
    headers.set("content-length", String(n));
  }
  return new Request(`http://127.0.0.1:8081${path}`, { method: "POST", ...init, headers });
}

async function send(app: App, init: RequestInit & { path?: string }): Promise<Answer> {
  const res = await app.fetch(request(init.path ?? PATH, init), "127.0.0.1");
  const headers = [...res.headers].filter(([k]) => k !== "x-request-id").sort();
  return {
    status: res.status,
    headers,
    text: await res.text(),
    requestId: res.headers.get("x-request-id"),
  };
}

/** A fresh session's refresh token (its own user, so each side's exchange is alike). */
async function freshToken(srv: TestServer, tag: string): Promise<string> {
  const email = `lane-${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const res = await srv.fetch("/signup", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: "secret-pw-1" }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(typeof body.refresh_token, "string", "a session at sign-up");
  return body.refresh_token;
}

/** The answer with what differs between two users' exchanges blanked (tokens, ids, times). */
function shape(text: string): unknown {
  const walk = (v: unknown, key = ""): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    }
    if (
      typeof v === "string" &&
      /token|^id$|_id$|^sub$|email|_at$/.test(key)
    ) return `<${key}>`;
    if (typeof v === "number" && /_at$/.test(key)) return `<${key}>`;
    return v;
  };
  return walk(JSON.parse(text));
}

async function pair(env: Record<string, string> = {}) {
  const srv = await startTestServer({
    AUTHSVC_REQUEST_ID_HEADER: "X-Trace-Id",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    ...env,
  });
  const logs: string[] = [];
  const plain = await createApp(srv.config, {
    db: srv.db,
    migrate: false,
    lanes: false,
    log: new Logger("info", (l) => logs.push(l)),
  });
  return { srv, lane: srv.app, plain, logs };
}

Deno.test("the refresh lane answers as the route table, request for request", async () => {
  const { srv, lane, plain } = await pair();
  try {
    assert.equal(lane.lane, true, "the test server has the lane");
    assert.equal(plain.lane, false);
    const json = { "content-type": "application/json" };
    const cases: [
      string,
      (token: () => Promise<string>) => Promise<RequestInit & { path?: string }>,
    ][] = [
      [
        "success",
        async (t) => ({ headers: json, body: JSON.stringify({ refresh_token: await t() }) }),
      ],
      ["success from another origin, with an inherited request id", async (t) => ({
        headers: { ...json, origin: "https://app.example.com", "x-trace-id": "trace-123" },
        body: JSON.stringify({ refresh_token: await t() }),
      })],
      ["a form-encoded body", async (t) => ({
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `refresh_token=${encodeURIComponent(await t())}`,
      })],
      ["no content type", async (t) => ({ body: JSON.stringify({ refresh_token: await t() }) })],
      ["success, and an invalid request id is replaced", async (t) => ({
        headers: { ...json, "x-trace-id": "bad id with spaces" },
        body: JSON.stringify({ refresh_token: await t() }),
      })],
      ["refresh_token missing", () => Promise.resolve({ headers: json, body: "{}" })],
      ["empty body", () => Promise.resolve({ headers: json, body: "" })],
      [
        "refresh_token not a string",
        () => Promise.resolve({ headers: json, body: JSON.stringify({ refresh_token: 42 }) }),
      ],
      [
        "refresh_token too long",
        () =>
          Promise.resolve({
            headers: json,
            body: JSON.stringify({ refresh_token: "x".repeat(600) }),
          }),
      ],
      [
        "an unknown token",
        () =>
          Promise.resolve({ headers: json, body: JSON.stringify({ refresh_token: "nope1234" }) }),
      ],
      [
        "a NUL in the token",
        () =>
          Promise.resolve({ headers: json, body: JSON.stringify({ refresh_token: "a\u0000b" }) }),
      ],
      [
        "malformed JSON, from an origin",
        () => Promise.resolve({ headers: { ...json, origin: "https://x.example" }, body: "{nope" }),
      ],
      ["a JSON array", () => Promise.resolve({ headers: json, body: "[1]" })],
      [
        "bytes that are not UTF-8",
        () => Promise.resolve({ headers: json, body: new Uint8Array([0x7b, 0xff, 0x7d]) }),
      ],
      [
        "nested too deeply",
        () => Promise.resolve({ headers: json, body: "[".repeat(40) + "]".repeat(40) }),
      ],
      [
        "a NUL in the query",
        () => Promise.resolve({ path: `${PATH}&x=%00`, headers: json, body: "{}" }),
      ],
      [
        "a body over the limit",
        () => Promise.resolve({ headers: json, body: "{" + " ".repeat(1 << 20) + "}" }),
      ],
    ];
    for (const [what, make] of cases) {
      const init = await make(() => freshToken(srv, "a"));
      assert.equal(laneOf(request(init.path ?? PATH, init)), "refresh", `${what}: the lane's`);
      const a = await send(lane, init);
      const b = await send(plain, await make(() => freshToken(srv, "b")));
      assert.equal(a.status, b.status, `${what}: status`);
      assert.deepEqual(a.headers, b.headers, `${what}: headers`);
      assert.deepEqual(shape(a.text), shape(b.text), `${what}: body`);
      assert.ok(a.requestId && b.requestId, `${what}: a request id`);
      if (
        what.startsWith("success") || what.includes("form-encoded") ||
        what.includes("no content type")
      ) {
        assert.equal(a.status, 200, `${what}: ${a.text}`);
        assert.equal(typeof JSON.parse(a.text).user.id, "string");
      }
      if (what.includes("inherited")) assert.equal(a.requestId, "trace-123");
      if (what.includes("invalid request id")) assert.notEqual(a.requestId, "bad id with spaces");
    }

    // A token used again: inside the reuse interval the same child (both lanes), then reuse
    // detection; each side on its own family.
    for (const app of [lane, plain]) {
      const t = await freshToken(srv, "reuse");
      const first = await send(app, { headers: json, body: JSON.stringify({ refresh_token: t }) });
      const again = await send(app, { headers: json, body: JSON.stringify({ refresh_token: t }) });
      assert.equal(first.status, 200, first.text);
      assert.equal(again.status, 200);
      assert.equal(JSON.parse(again.text).refresh_token, JSON.parse(first.text).refresh_token);
    }
  } finally {
    await plain.close();
    await srv.close();
  }
});

Deno.test("the refresh lane counts against the token limit as the route does", async () => {
  const { srv, lane, plain } = await pair({ AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "2/1h" });
  try {
    const answers: Answer[][] = [[], []];
    for (const [i, app] of [lane, plain].entries()) {
      for (let n = 0; n < 3; n++) {
        answers[i].push(
          await send(app, {
            headers: { "content-type": "application/json", origin: "https://o.example" },
            body: JSON.stringify({ refresh_token: "unknown-token" }),
          }),
        );
      }
    }
    assert.deepEqual(answers[0].map((a) => a.status), [400, 400, 429]);
    assert.deepEqual(answers[1].map((a) => a.status), [400, 400, 429]);
    const [a, b] = [answers[0][2], answers[1][2]];
    assert.deepEqual(a.headers, b.headers);
    assert.ok(a.headers.some(([k]) => k === "retry-after"), "Retry-After");
    assert.equal(a.text, b.text);
  } finally {
    await plain.close();
    await srv.close();
  }
});

Deno.test("laneOf: only requests a lane answers alike", () => {
  const req = (path: string, init: RequestInit = {}) => request(path, { body: "{}", ...init });
  assert.equal(laneOf(req(PATH)), "refresh");
  assert.equal(laneOf(req(`${PATH}&x=1`)), "refresh");
  assert.equal(laneOf(req("/token?x=1&grant_type=refresh_token")), "refresh");
  assert.equal(laneOf(req("/token?grant_type=password")), null);
  assert.equal(laneOf(req("/token?grant_type=refresh_token_x")), null);
  assert.equal(laneOf(req("/token")), null, "grant_type in the body: hono");
  assert.equal(laneOf(req("/token/?grant_type=refresh_token")), null);
  assert.equal(laneOf(req("/tokens?grant_type=refresh_token")), null);
  assert.equal(laneOf(req("/tok%65n?grant_type=refresh_token")), null);
  assert.equal(laneOf(req(PATH, { method: "PUT" })), null);
  assert.equal(laneOf(new Request(`http://h:1${PATH}`, { method: "GET" })), null);
  const noLength = new Request(`http://h:1${PATH}`, { method: "POST", body: "{}" });
  assert.equal(laneOf(noLength), null, "no Content-Length: hono counts the body");
  const chunked = request(PATH, {
    body: "{}",
    headers: { "transfer-encoding": "chunked" },
  });
  assert.equal(laneOf(chunked), null, "chunked: hono counts the body");
});

Deno.test("laneOf: GET /user exactly, with or without a query", () => {
  const get = (path: string, method = "GET") => new Request(`http://h:1${path}`, { method });
  assert.equal(laneOf(get("/user")), "user");
  assert.equal(laneOf(get("/user?x=1")), "user");
  assert.equal(laneOf(get("/user?")), "user");
  assert.equal(laneOf(get("/user", "HEAD")), null, "HEAD: hono answers it without a body");
  assert.equal(laneOf(get("/user", "OPTIONS")), null, "preflight: hono's cors");
  assert.equal(laneOf(request("/user", { method: "PUT", body: "{}" })), null);
  assert.equal(laneOf(request("/user", { body: "{}" })), null, "POST /user: 404 from hono");
  assert.equal(laneOf(get("/user/")), null);
  assert.equal(laneOf(get("/users")), null);
  assert.equal(laneOf(get("/user/identities/authorize")), null);
  assert.equal(laneOf(get("/%75ser")), null);
  assert.equal(laneOf(get("/admin/user")), null);
  assert.equal(laneOf(get("/userx?y")), null);
});

/** A signed-up user's access token (autoconfirm: a session at sign-up). */
async function signedUp(srv: TestServer, tag: string): Promise<{ token: string; id: string }> {
  const email = `lane-user-${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const res = await srv.fetch("/signup", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: "secret-pw-1", data: { plan: "pro" } }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return { token: body.access_token, id: body.user.id };
}

/** GET `path` (default /user) with `headers` through `app`. */
function getUser(app: App, headers: Record<string, string>, path = "/user"): Promise<Answer> {
  return send(app, { method: "GET", path, headers });
}

Deno.test("the GET /user lane answers as the route table, request for request", async () => {
  for (const cache of ["1000", "0"]) {
    const { srv, lane, plain } = await pair({ AUTHSVC_API_USER_CACHE_SIZE: cache });
    try {
      const now = Math.floor(Date.now() / 1000);
      const sign = (claims: Record<string, unknown>) =>
        srv.services.jwt.sign({ aud: "authenticated", role: "authenticated", ...claims });
      const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
      const cases: [string, () => Promise<{ headers: Record<string, string>; path?: string }>][] = [
        ["success", async () => ({ headers: bearer((await signedUp(srv, "a")).token) })],
        ["success from another origin, with an inherited request id", async () => ({
          headers: {
            ...bearer((await signedUp(srv, "b")).token),
            origin: "https://app.example.com",
            "x-trace-id": "trace-456",
          },
        })],
        ["success with a query", async () => ({
          headers: bearer((await signedUp(srv, "c")).token),
          path: "/user?select=*",
        })],
        ["success, lower-case scheme and trailing spaces", async () => ({
          headers: { authorization: `bearer   ${(await signedUp(srv, "d")).token}  ` },
        })],
        ["no Authorization header", () => Promise.resolve({ headers: {} })],
        ["Basic credentials, from an origin", () =>
          Promise.resolve({
            headers: { authorization: "Basic dXNlcjpwdw==", origin: "https://x.example" },
          })],
        ["Bearer without a token", () => Promise.resolve({ headers: { authorization: "Bearer" } })],
        ["a token that is not a JWT", () => Promise.resolve({ headers: bearer("not.a.jwt") })],
        ["a token signed with another secret", async () => {
          const { token } = await signedUp(srv, "e");
          const [h, p] = token.split(".");
          return { headers: bearer(`${h}.${p}.${"A".repeat(43)}`) };
        }],
        ["an expired token", async () => {
          const { id } = await signedUp(srv, "f");
          return { headers: bearer(await sign({ sub: id, iat: now - 7200, exp: now - 3600 })) };
        }],
        ["a sub that is not a UUID", async () => ({
          headers: bearer(await sign({ sub: "robert'); DROP TABLE users;--", exp: now + 600 })),
        })],
        ["a user that does not exist", async () => ({
          headers: bearer(await sign({ sub: crypto.randomUUID(), exp: now + 600 })),
        })],
        ["a session that does not exist", async () => {
          const { id } = await signedUp(srv, "g");
          const claims = { sub: id, session_id: crypto.randomUUID(), exp: now + 600 };
          return { headers: bearer(await sign(claims)) };
        }],
        ["a session id that is not a UUID", async () => {
          const { id } = await signedUp(srv, "h");
          const claims = { sub: id, session_id: "not-a-uuid", exp: now + 600 };
          return { headers: bearer(await sign(claims)) };
        }],
        ["a sessionless token (no session_id)", async () => {
          const { id } = await signedUp(srv, "i");
          return { headers: bearer(await sign({ sub: id, exp: now + 600 })) };
        }],
        ["a NUL in the query", async () => ({
          headers: bearer((await signedUp(srv, "j")).token),
          path: "/user?x=%00",
        })],
        ["success, and an invalid request id is replaced", async () => ({
          headers: { ...bearer((await signedUp(srv, "k")).token), "x-trace-id": "bad id" },
        })],
      ];
      for (const [what, make] of cases) {
        const label = `cache ${cache}, ${what}`;
        const init = await make();
        assert.equal(laneOf(request(init.path ?? "/user", { method: "GET" })), "user", label);
        const a = await getUser(lane, init.headers, init.path);
        const b = await getUser(plain, (await make()).headers, init.path);
        assert.equal(a.status, b.status, `${label}: status (${a.text} / ${b.text})`);
        assert.deepEqual(a.headers, b.headers, `${label}: headers`);
        assert.deepEqual(shape(a.text), shape(b.text), `${label}: body`);
        assert.ok(a.requestId && b.requestId, `${label}: a request id`);
        if (what.startsWith("success") || what.includes("sessionless")) {
          assert.equal(a.status, 200, `${label}: ${a.text}`);
          assert.equal(JSON.parse(a.text).user_metadata.plan, "pro");
        } else {
          assert.ok(a.status >= 400, `${label}: refused (${a.status})`);
        }
        if (what.includes("inherited")) assert.equal(a.requestId, "trace-456");
        if (what.includes("invalid request id")) assert.notEqual(a.requestId, "bad id");
      }

      // The same token again (a kept answer where the cache is on), then after a change made
      // through the other app, then after sign-out: each app sees what the database holds.
      const u = await signedUp(srv, "again");
      const h = bearer(u.token);
      for (const app of [lane, plain]) {
        const first = await getUser(app, h);
        const second = await getUser(app, h);
        assert.equal(first.status, 200, first.text);
        assert.equal(second.text, first.text, "the same answer twice");
      }
      const put = await srv.fetch("/user", {
        method: "PUT",
        headers: { ...h, "content-type": "application/json" },
        body: JSON.stringify({ data: { plan: "team" } }),
      });
      assert.equal(put.status, 200, await put.text());
      const [a, b] = [await getUser(lane, h), await getUser(plain, h)];
      assert.equal(a.text, b.text, "the same answer after a change");
      assert.equal(JSON.parse(a.text).user_metadata.plan, "team");
      const out = await srv.fetch("/logout", { method: "POST", headers: h });
      assert.equal(out.status, 204, await out.text());
      const [c, d] = [await getUser(lane, h), await getUser(plain, h)];
      assert.equal(c.status, 403, c.text);
      assert.equal(JSON.parse(c.text).error_code, "session_not_found");
      assert.deepEqual([c.status, c.headers, c.text], [d.status, d.headers, d.text]);
    } finally {
      await plain.close();
      await srv.close();
    }
  }
});

Deno.test("each lane writes the observer's access log line", async () => {
  const srv = await startTestServer({ LOG_LEVEL: "info" });
  try {
    assert.equal(srv.app.lane, true);
    const requests: [string, RequestInit, number][] = [
      [PATH, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }, 400],
      ["/user", { method: "GET" }, 401],
    ];
    for (const [path, init, status] of requests) {
      const headers = {
        ...init.headers as Record<string, string>,
        "x-forwarded-for": "203.0.113.9",
      };
      const res = await srv.fetch(path, { ...init, headers });
      assert.equal(res.status, status);
      const id = res.headers.get("x-request-id");
      await res.body?.cancel();
      const line = srv.logs.map((l) => JSON.parse(l)).find((l) =>
        l.msg === "request" && l.request_id === id
      );
      assert.ok(line, `an access log line for ${id}: ${srv.logs.slice(-3).join("\n")}`);
      assert.equal(line.method, init.method);
      assert.equal(line.route, path.split("?")[0]);
      assert.equal(line.status, status);
      assert.equal(typeof line.duration_ms, "number");
    }
  } finally {
    await srv.close();
  }
});

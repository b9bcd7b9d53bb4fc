/**
 * Hostile input on the newer surface (issue 38, item 12), each found by an
 * independent fuzz: a time PostgreSQL cannot hold in the audit filters, bodies
 * that are no JSON object on the console's own endpoints, invalid UTF-8
 * forwarded by the console, a client that goes away in the middle of its
 * body, and a provider's form_post copied whole into a Location header.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { ConsoleBrowser, createOperator } from "./_console.ts";

const admin = async (srv: TestServer) => ({
  authorization: `Bearer ${await srv.serviceRoleToken()}`,
});

Deno.test("GET /admin/audit with since or until in year 0000 (or past 9999 in UTC)", async () => {
  const srv = await startTestServer({});
  try {
    for (const name of ["since", "until"]) {
      for (
        const v of [
          "0000-01-01T00:00:00Z",
          "0000-12-31",
          "0001-01-01T00:00:00+14:00",
          "9999-12-31T23:59:59-14:00",
        ]
      ) {
        const res = await srv.fetch(`/admin/audit?${name}=${encodeURIComponent(v)}`, {
          headers: await admin(srv),
        });
        const body = await res.json();
        assert.equal(res.status, 400, `${name}=${v}: ${JSON.stringify(body)}`);
        assert.equal(body.error_code, "validation_failed");
        assert.match(body.msg, new RegExp(`^${name} must be an ISO 8601 time`));
      }
      const ok = await srv.fetch(`/admin/audit?${name}=0001-01-02T00:00:00Z`, {
        headers: await admin(srv),
      });
      await ok.body?.cancel();
      assert.equal(ok.status, 200);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("the console's JSON endpoints sent null or another non-object body", async () => {
  const srv = await startTestServer({ AUTHSVC_CONSOLE_ENABLED: "true" });
  try {
    const email = `op-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await createOperator(srv, email, "operator-password-1");
    const browser = new ConsoleBrowser(srv);
    await (await browser.fetch("/console/", { csrf: false })).body?.cancel();
    // The MFA steps read their body only while a sign-in waits for its factor.
    browser.cookies.set("authsvc_console_mfa", "pending-access-token%20pending-refresh-token");
    for (
      const path of ["/console/api/login", "/console/api/mfa/challenge", "/console/api/mfa/verify"]
    ) {
      for (const body of ["null", "[]", '"text"', "42", "true", "[{}]"]) {
        const res = await browser.fetch(path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        const answer = await res.json();
        assert.equal(res.status, 400, `${path} ${body}: ${JSON.stringify(answer)}`);
        assert.equal(answer.error_code, "bad_json", `${path} ${body}`);
      }
    }
  } finally {
    await srv.close();
  }
});

Deno.test("the console forwards an admin call whose body is not UTF-8", async () => {
  const srv = await startTestServer({ AUTHSVC_CONSOLE_ENABLED: "true" });
  try {
    const email = `op-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await createOperator(srv, email, "operator-password-1");
    const op = new ConsoleBrowser(srv);
    await op.signIn(email, "operator-password-1");
    const victim = `x-${crypto.randomUUID().slice(0, 8)}`;
    const enc = new TextEncoder();
    const bytes = new Uint8Array([
      ...enc.encode(`{"email":"${victim}@example.com","user_metadata":{"name":"a`),
      0xff,
      0xfe,
      ...enc.encode(`"}}`),
    ]);
    for (const path of ["/console/api/gotrue/admin/users", "/admin/users"]) {
      const res = await (path.startsWith("/console")
        ? op.fetch(path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: bytes,
        })
        : srv.fetch(path, {
          method: "POST",
          headers: { "content-type": "application/json", ...await admin(srv) },
          body: bytes,
        }));
      const body = await res.json();
      assert.equal(res.status, 400, `${path}: ${JSON.stringify(body)}`);
      assert.equal(body.error_code, "bad_json", path);
    }
    const found = await srv.fetch(`/admin/users?filter=${victim}`, { headers: await admin(srv) });
    assert.deepEqual((await found.json()).users, [], "no user with U+FFFD was stored");
  } finally {
    await srv.close();
  }
});

/** Sends the head and part of a body (chunked, or of a declared length), then closes. */
async function goAwayMidBody(
  port: number,
  [method, path, headers]: [string, string, string],
  chunked: boolean,
) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const framing = chunked
    ? 'Transfer-Encoding: chunked\r\n\r\n6\r\n{"a":1\r\n'
    : 'Content-Length: 5000\r\n\r\n{"a":1';
  await conn.write(new TextEncoder().encode(
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      headers + framing,
  ));
  conn.close();
}

Deno.test("a client gone in the middle of its body is no error-level stack trace", async () => {
  const srv = await startTestServer({ LOG_LEVEL: "info", AUTHSVC_CONSOLE_ENABLED: "true" });
  try {
    const port = Number(new URL(srv.url).port);
    const csrf = "Cookie: authsvc_console_csrf=t\r\nX-CSRF-Token: t\r\n";
    const sent: [string, string, string][] = [
      ["POST", "/signup", ""],
      ["POST", "/token?grant_type=password", ""],
      ["PUT", "/user", ""],
      ["POST", "/callback", ""],
      ["POST", "/admin/users", ""],
      ["POST", "/console/api/login", csrf],
      ["POST", "/console/api/gotrue/invite", csrf],
    ];
    for (const request of sent) {
      for (const chunked of [true, false]) await goAwayMidBody(port, request, chunked);
    }
    // Every request ends with its access-log line, whatever its answer.
    const answered = () => srv.logs.filter((l) => JSON.parse(l).msg === "request").length;
    const deadline = Date.now() + 60_000;
    while (answered() < 2 * sent.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(answered(), 2 * sent.length, srv.logs.join("\n"));
    const errors = srv.logs.filter((l) =>
      ["error", "fatal", "panic"].includes(JSON.parse(l).level)
    );
    assert.deepEqual(errors, []);
  } finally {
    await srv.close();
  }
});

Deno.test("POST /callback copies a huge form into the Location header", async () => {
  const srv = await startTestServer({});
  try {
    const post = async (form: URLSearchParams) => {
      const res = await srv.fetch("/callback", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form.toString(),
        redirect: "manual",
      });
      await res.body?.cancel();
      return { status: res.status, location: res.headers.get("location") ?? "" };
    };
    // A provider's form_post arrives without the state cookie (cross-site POST): the browser is
    // sent back as a GET with what /callback reads, and nothing else.
    const apple = await post(
      new URLSearchParams({
        state: "s".repeat(600),
        code: "c".repeat(300),
        user: JSON.stringify({ name: { firstName: "Ada" }, email: "ada@example.com" }),
        junk: "j".repeat(900_000),
      }),
    );
    assert.equal(apple.status, 303);
    assert.ok(apple.location.length < 4096, `Location of ${apple.location.length} bytes`);
    const replay = new URLSearchParams(apple.location.slice(apple.location.indexOf("?")));
    assert.deepEqual([...replay.keys()].sort(), ["code", "state", "user"]);
    // A value over the bound: the error redirect to the site, not the value.
    const huge = await post(new URLSearchParams({ state: "s", code: "c".repeat(500_000) }));
    assert.ok(huge.location.length < 4096, `Location of ${huge.location.length} bytes`);
    const to = new URL(huge.location);
    assert.equal(to.origin, "http://localhost:3000");
    assert.equal(to.searchParams.get("error_code"), "bad_oauth_callback");
  } finally {
    await srv.close();
  }
});

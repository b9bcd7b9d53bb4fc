import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

Deno.test("health answers once migrations are applied; settings list every provider", async () => {
  const srv = await startTestServer({ AUTHSVC_EXTERNAL_GITHUB_ENABLED: "false" });
  try {
    const h = await srv.fetch("/health");
    assert.equal(h.status, 200);
    assert.deepEqual(Object.keys(await h.json()).sort(), ["description", "name", "version"]);
    const s = await (await srv.fetch("/settings")).json();
    assert.equal(s.external.github, false);
    assert.equal(
      Object.keys(s.external).filter((k) => !["email", "phone", "anonymous_users"].includes(k))
        .length,
      18,
    );
    assert.equal(s.disable_signup, false);
    assert.equal(typeof s.mailer_autoconfirm, "boolean");
    const nf = await srv.fetch("/nope");
    assert.equal(nf.status, 404);
    const body = await nf.json();
    assert.equal(body.code, 404);
    assert.ok(nf.headers.get("x-request-id"));
  } finally {
    await srv.close();
  }
});

Deno.test("CORS headers and X-Request-Id are on every kind of answer: JSON, error, redirect, preflight", async () => {
  const srv = await startTestServer({});
  const origin = "https://app.example.com";
  const corsOf = (r: Response) => ({
    origin: r.headers.get("access-control-allow-origin"),
    credentials: r.headers.get("access-control-allow-credentials"),
    expose: r.headers.get("access-control-expose-headers"),
    vary: r.headers.get("vary"),
    requestId: Boolean(r.headers.get("x-request-id")),
  });
  const expected = {
    origin,
    credentials: "true",
    expose: "X-Total-Count,Link,X-Request-Id,Retry-After",
    vary: "Origin",
    requestId: true,
  };
  try {
    const answers: [string, Response, number][] = [
      ["JSON", await srv.fetch("/health", { headers: { origin } }), 200],
      ["no route", await srv.fetch("/nope", { headers: { origin } }), 404],
      ["error thrown by a handler", await srv.fetch("/user", { headers: { origin } }), 401],
      [
        "redirect",
        await srv.fetch("/verify?type=signup&token=not-a-token", {
          headers: { origin },
          redirect: "manual",
        }),
        303,
      ],
    ];
    for (const [name, r, status] of answers) {
      await r.body?.cancel();
      assert.equal(r.status, status, name);
      assert.deepEqual(corsOf(r), expected, name);
    }
    // Without an Origin header (not a CORS request) only Vary, as GoTrue's rs/cors: on JSON
    // answers and on a Response a handler made itself.
    for (
      const r of [
        await srv.fetch("/health"),
        await srv.fetch("/verify?type=signup&token=not-a-token", { redirect: "manual" }),
      ]
    ) {
      await r.body?.cancel();
      assert.deepEqual(corsOf(r), {
        origin: null,
        credentials: null,
        expose: null,
        vary: "Origin",
        requestId: true,
      });
    }

    const pre = await srv.fetch("/token?grant_type=password", {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "apikey, content-type",
      },
    });
    await pre.body?.cancel();
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("access-control-allow-origin"), origin);
    assert.equal(pre.headers.get("access-control-allow-credentials"), "true");
    assert.match(pre.headers.get("access-control-allow-methods") ?? "", /POST/);
    assert.match(pre.headers.get("access-control-allow-headers") ?? "", /apikey/);
    assert.equal(pre.headers.get("access-control-max-age"), "600");
    assert.ok(pre.headers.get("x-request-id"));
  } finally {
    await srv.close();
  }
});

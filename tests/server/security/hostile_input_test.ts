/**
 * Hostile input at the edge (issue 25 items 1, 2, 4 and 6; issue 17 item 8),
 * each test named after the attack and performed through the HTTP API:
 * strings PostgreSQL cannot store (unpaired UTF-16 surrogates, NUL) in any
 * member of any body or query, look-alike e-mail addresses, oversized or
 * deep metadata, prototype keys in admin search, and failed requests that
 * must leave no row behind.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

type Json = Record<string, unknown>;

/** Tables a refused request must not change. */
const TABLES = [
  "users",
  "identities",
  "sessions",
  "refresh_tokens",
  "one_time_tokens",
  "flow_state",
  "mfa_factors",
];

async function rows(srv: TestServer): Promise<Record<string, number>> {
  const cols = TABLES.map((t) => `(SELECT count(*) FROM ${srv.db.t(t)})::int AS ${t}`);
  const [row] = await srv.db.query<Record<string, number>>(`SELECT ${cols.join(", ")}`);
  return row;
}

const ENV = {
  AUTHSVC_MAILER_AUTOCONFIRM: "true",
  AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
  AUTHSVC_SMS_AUTOCONFIRM: "true",
  AUTHSVC_MFA_PHONE_ENROLL_ENABLED: "true",
};

const LONE = ["\ud800", "\udfff", "a\udbffz", "\udc00\ud800"];

Deno.test("lone surrogates in any stored string (data, metadata, factor names and issuers, redirect_to, addresses) are refused with 400 naming the field, and write nothing", async () => {
  const srv = await startTestServer(ENV);
  try {
    const admin = await srv.serviceRoleToken();
    const session = await call(srv, "POST", "/signup", {
      body: {
        email: uniqueEmail("owner"),
        password: "pw-123456",
      },
    });
    assert.equal(session.status, 200);
    const token = String(session.body.access_token);
    const before = await rows(srv);
    for (const lone of LONE) {
      const site = `http://localhost:3000/${lone}`;
      const cases: [string, string, Json, string | undefined, string][] = [
        [
          "POST",
          "/signup",
          { email: uniqueEmail("s"), password: "pw-123456", data: { n: lone } },
          undefined,
          "data.n",
        ],
        [
          "POST",
          "/signup",
          { email: `x${lone}@example.com`, password: "pw-123456" },
          undefined,
          "email",
        ],
        [
          "POST",
          "/signup",
          { phone: "+15550100", password: "pw-123456", data: { [lone]: 1 } },
          undefined,
          "data.",
        ],
        [
          "POST",
          "/signup",
          { data: { nested: [{ deep: lone }] } },
          undefined,
          "data.nested.0.deep",
        ],
        ["POST", "/otp", { email: uniqueEmail("o"), data: { n: lone } }, undefined, "data.n"],
        ["POST", "/otp", { email: uniqueEmail("o"), redirect_to: site }, undefined, "redirect_to"],
        ["POST", "/otp", { phone: "+15550101", data: { n: lone } }, undefined, "data.n"],
        [
          "POST",
          "/magiclink",
          { email: uniqueEmail("m"), redirect_to: site },
          undefined,
          "redirect_to",
        ],
        [
          "POST",
          "/recover",
          { email: uniqueEmail("r"), redirect_to: site },
          undefined,
          "redirect_to",
        ],
        ["POST", "/invite", { email: uniqueEmail("i"), data: { n: lone } }, admin, "data.n"],
        ["POST", "/invite", { email: uniqueEmail("i"), redirect_to: site }, admin, "redirect_to"],
        [
          "POST",
          "/admin/users",
          { email: uniqueEmail("a"), user_metadata: { n: lone } },
          admin,
          "user_metadata.n",
        ],
        [
          "POST",
          "/admin/users",
          { email: uniqueEmail("a"), app_metadata: { n: lone } },
          admin,
          "app_metadata.n",
        ],
        [
          "POST",
          "/admin/generate_link",
          { type: "magiclink", email: uniqueEmail("g"), redirect_to: site },
          admin,
          "redirect_to",
        ],
        [
          "POST",
          "/admin/generate_link",
          { type: "signup", email: uniqueEmail("g"), password: "pw-123456", data: { n: lone } },
          admin,
          "data.n",
        ],
        ["PUT", "/user", { data: { n: lone } }, token, "data.n"],
        [
          "POST",
          "/factors",
          { factor_type: "totp", friendly_name: `f${lone}` },
          token,
          "friendly_name",
        ],
        ["POST", "/factors", { factor_type: "totp", issuer: `i${lone}` }, token, "issuer"],
        [
          "POST",
          "/factors",
          { factor_type: "phone", phone: "+15550102", friendly_name: lone },
          token,
          "friendly_name",
        ],
        [
          "POST",
          "/token?grant_type=password",
          { email: `x${lone}@example.com`, password: "pw-123456" },
          undefined,
          "email",
        ],
      ];
      for (const [method, path, body, bearer, field] of cases) {
        const r = await call(srv, method, path, { body: body, token: bearer });
        const label = `${method} ${path} ${JSON.stringify(body)}`;
        assert.equal(r.status, 400, `${label}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error_code, "validation_failed", label);
        assert.ok(String(r.body.msg).startsWith(field), `${label}: ${r.body.msg}`);
        assert.match(String(r.body.msg), /well-formed Unicode/, label);
      }
    }
    assert.deepEqual(await rows(srv), before, "a refused request changed rows");
  } finally {
    await srv.close();
  }
});

Deno.test("NUL characters in a body member or any query parameter are refused with 400 naming it", async () => {
  const srv = await startTestServer(ENV);
  try {
    const admin = await srv.serviceRoleToken();
    const before = await rows(srv);
    const bodies: [string, string, Json, string | undefined, string][] = [
      [
        "POST",
        "/signup",
        { email: uniqueEmail("n"), password: "pw\u0000123456" },
        undefined,
        "password",
      ],
      [
        "POST",
        "/signup",
        { email: uniqueEmail("n"), password: "pw-123456", data: { "k\u0000": 1 } },
        undefined,
        "data.k\\u0000",
      ],
      [
        "POST",
        "/otp",
        { email: uniqueEmail("n"), redirect_to: "http://localhost:3000/\u0000" },
        undefined,
        "redirect_to",
      ],
      [
        "POST",
        "/invite",
        { email: uniqueEmail("n"), data: { a: { b: "\u0000" } } },
        admin,
        "data.a.b",
      ],
    ];
    for (const [method, path, body, bearer, field] of bodies) {
      const r = await call(srv, method, path, { body: body, token: bearer });
      assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error_code, "validation_failed");
      assert.ok(String(r.body.msg).startsWith(field), String(r.body.msg));
    }
    const queries: [string, string][] = [
      ["/admin/audit?query=action:%00", "query"],
      ["/admin/audit?query=author:a%00b&page=1", "query"],
      ["/admin/audit?page=%00", "page"],
      ["/admin/users?filter=%00", "filter"],
      ["/admin/users?per_page=1%00", "per_page"],
      ["/admin/users?x%00y=1", "x\\u0000y"],
      ["/verify?type=signup&token=%00&redirect_to=http://localhost:3000/", "token"],
      ["/authorize?provider=github&redirect_to=%00", "redirect_to"],
    ];
    for (const [path, param] of queries) {
      const r = await call(srv, "GET", path, { token: admin });
      assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error_code, "validation_failed", path);
      assert.ok(String(r.body.msg).startsWith(`query parameter ${param} `), String(r.body.msg));
      assert.match(String(r.body.msg), /must not contain a NUL character/);
    }
    assert.deepEqual(await rows(srv), before);
  } finally {
    await srv.close();
  }
});

Deno.test("look-alike addresses: x\\ud800@ and x\\udfff@ are refused, x\\ufffd@ is its own account and cannot be signed into as the others", async () => {
  const srv = await startTestServer(ENV);
  try {
    const domain = `${crypto.randomUUID().slice(0, 8)}.example.com`;
    const replacement = `x\ufffd@${domain}`;
    for (const lone of ["\ud800", "\udfff"]) {
      const r = await call(srv, "POST", "/signup", {
        body: {
          email: `x${lone}@${domain}`,
          password: "pw-123456",
        },
      });
      assert.equal(r.status, 400);
    }
    const up = await call(srv, "POST", "/signup", {
      body: { email: replacement, password: "pw-123456" },
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal((up.body.user as Json).email, replacement);
    for (const lone of ["\ud800", "\udfff"]) {
      const r = await call(srv, "POST", "/token?grant_type=password", {
        body: {
          email: `x${lone}@${domain}`,
          password: "pw-123456",
        },
      });
      assert.equal(r.status, 400, "a lone surrogate signed into the U+FFFD account");
      assert.equal(r.body.access_token, undefined);
    }
    const own = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: replacement,
        password: "pw-123456",
      },
    });
    assert.equal(own.status, 200);
    const [{ n }] = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("users")} WHERE email LIKE $1`,
      [`%@${domain}`],
    );
    assert.equal(n, 1);
  } finally {
    await srv.close();
  }
});

Deno.test("one canonical address: upper case and decomposed Unicode sign into the same account, one row", async () => {
  const srv = await startTestServer(ENV);
  try {
    const tag = crypto.randomUUID().slice(0, 8);
    const composed = `jos\u00e9-${tag}@example.com`;
    const decomposed = `JOSE\u0301-${tag}@EXAMPLE.com`;
    const up = await call(srv, "POST", "/signup", {
      body: { email: decomposed, password: "pw-123456" },
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal((up.body.user as Json).email, composed);
    const again = await call(srv, "POST", "/signup", {
      body: { email: composed, password: "pw-654321" },
    });
    assert.notEqual(again.status, 500);
    const signIn = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: `JOS\u00c9-${tag}@example.com`,
        password: "pw-123456",
      },
    });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    assert.equal((signIn.body.user as Json).id, (up.body.user as Json).id);
    const [{ n }] = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("users")} WHERE email LIKE $1`,
      [`%-${tag}@example.com`],
    );
    assert.equal(n, 1);
  } finally {
    await srv.close();
  }
});

Deno.test("control, bidi and zero-width characters in e-mail addresses and phones are refused", async () => {
  const srv = await startTestServer(ENV);
  try {
    const admin = await srv.serviceRoleToken();
    const before = await rows(srv);
    for (
      const ch of ["\u0001", "\u007f", "\u0085", "\u200b", "\u200e", "\u202e", "\u2066", "\ufeff"]
    ) {
      const email = `x${ch}y-${crypto.randomUUID().slice(0, 6)}@example.com`;
      for (
        const [path, body, bearer] of [
          ["/signup", { email, password: "pw-123456" }, undefined],
          ["/otp", { email }, undefined],
          ["/invite", { email }, admin],
          ["/admin/users", { email }, admin],
        ] as [string, Json, string | undefined][]
      ) {
        const r = await call(srv, "POST", path, { body: body, token: bearer });
        assert.equal(r.status, 400, `${path} ${JSON.stringify(email)}: ${r.status}`);
        assert.equal(
          r.body.error_code,
          "validation_failed",
          "GoTrue's code for an invalid address",
        );
      }
      const phone = await call(srv, "POST", "/signup", {
        body: {
          phone: `+1555${ch}0100`,
          password: "pw-123456",
        },
      });
      assert.equal(phone.status, 422, JSON.stringify(phone.body));
    }
    assert.deepEqual(await rows(srv), before);
  } finally {
    await srv.close();
  }
});

Deno.test("huge or deeply nested metadata is refused, also when merged over several updates", async () => {
  const srv = await startTestServer(ENV);
  try {
    const admin = await srv.serviceRoleToken();
    let deep: Json = { leaf: 1 };
    for (let i = 0; i < 20; i++) deep = { d: deep };
    const big = { blob: "x".repeat(20_000) };
    for (const data of [deep, big]) {
      const r = await call(srv, "POST", "/signup", {
        body: {
          email: uniqueEmail("big"),
          password: "pw-123456",
          data,
        },
      });
      assert.equal(r.status, 400, JSON.stringify(r.body).slice(0, 200));
      assert.match(String(r.body.msg), /^data is (nested too deeply|too large)/);
    }
    const created = await call(srv, "POST", "/admin/users", {
      body: {
        email: uniqueEmail("meta"),
        app_metadata: deep,
      },
      token: admin,
    });
    assert.equal(created.status, 400);
    assert.match(String(created.body.msg), /^app_metadata is nested too deeply/);

    const session = await call(srv, "POST", "/signup", {
      body: {
        email: uniqueEmail("grow"),
        password: "pw-123456",
      },
    });
    const token = String(session.body.access_token);
    // Each update is within the bound; together they would not be.
    const part = "y".repeat(6000);
    assert.equal(
      (await call(srv, "PUT", "/user", { body: { data: { a: part } }, token: token })).status,
      200,
    );
    assert.equal(
      (await call(srv, "PUT", "/user", { body: { data: { b: part } }, token: token })).status,
      200,
    );
    const third = await call(srv, "PUT", "/user", { body: { data: { c: part } }, token: token });
    assert.equal(third.status, 400);
    assert.match(String(third.body.msg), /^data is too large/);
    const me = await call(srv, "GET", "/user", { token: token });
    assert.deepEqual(Object.keys(me.body.user_metadata as Json).sort(), ["a", "b"]);
  } finally {
    await srv.close();
  }
});

Deno.test("prototype keys in metadata are stored as plain members, not as a prototype", async () => {
  const srv = await startTestServer(ENV);
  try {
    const session = await call(srv, "POST", "/signup", {
      body: {
        email: uniqueEmail("proto"),
        password: "pw-123456",
      },
    });
    const token = String(session.body.access_token);
    const res = await srv.fetch("/user", {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: '{"data":{"__proto__":{"admin":true},"constructor":"x"}}',
    });
    const body = await res.json();
    assert.equal(res.status, 200);
    assert.deepEqual(
      body.user_metadata,
      JSON.parse('{"__proto__":{"admin":true},"constructor":"x"}'),
    );
    assert.equal(Object.getPrototypeOf(body.user_metadata), Object.prototype);
  } finally {
    await srv.close();
  }
});

Deno.test("admin search with __proto__:, constructor:, a NUL or a 20 kB query answers 400; the Link header stays small", async () => {
  const srv = await startTestServer(ENV);
  try {
    const admin = await srv.serviceRoleToken();
    for (
      const q of ["__proto__:x", "constructor:x", "toString:x", "hasOwnProperty:", ":x", "action"]
    ) {
      const r = await call(srv, "GET", `/admin/audit?query=${encodeURIComponent(q)}`, {
        token: admin,
      });
      assert.equal(r.status, 400, `${q}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error_code, "validation_failed");
    }
    const huge = await call(srv, "GET", `/admin/audit?query=action:${"a".repeat(20_000)}`, {
      token: admin,
    });
    assert.equal(huge.status, 400);
    assert.match(String(huge.body.msg), /query is too long/);

    // Unknown parameters are not echoed into the Link header.
    const junk = "&junk=" + "j".repeat(6000);
    const ok = await call(srv, "GET", `/admin/audit?per_page=1&query=action:user${junk}${junk}`, {
      token: admin,
    });
    assert.equal(ok.status, 200);
    const link = ok.headers.get("link") ?? "";
    assert.ok(link.length < 400, `Link header of ${link.length} bytes`);
    assert.match(link, /<\/admin\/audit\?page=1&per_page=1&query=action%3Auser>; rel="last"/);

    for (
      const path of [
        "/admin/users?page=-1",
        "/admin/users?per_page=1e3",
        "/admin/users?page=__proto__",
        "/admin/audit?per_page=0",
        "/admin/audit?page=1.5",
      ]
    ) {
      const r = await call(srv, "GET", path, { token: admin });
      assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
    }
    const list = await call(srv, "GET", `/admin/users?filter=${"f".repeat(20_000)}`, {
      token: admin,
    });
    assert.equal(list.status, 200);
    assert.ok((list.headers.get("link") ?? "").length < 1000);
  } finally {
    await srv.close();
  }
});

Deno.test("a failed /invite or /otp creates no user: bad redirect_to, bad data, or a mail server that refuses", async () => {
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...smtp.env });
  try {
    const admin = await srv.serviceRoleToken();
    const before = await rows(srv);
    const bad: [string, Json, string | undefined][] = [
      [
        "/invite",
        { email: uniqueEmail("inv"), redirect_to: "http://localhost:3000/\ud800" },
        admin,
      ],
      ["/invite", { email: uniqueEmail("inv"), data: { n: "\ud800" } }, admin],
      ["/invite", { email: uniqueEmail("inv"), data: { blob: "x".repeat(20_000) } }, admin],
      [
        "/otp",
        { email: uniqueEmail("otp"), redirect_to: "http://localhost:3000/\ud800" },
        undefined,
      ],
      ["/otp", { email: uniqueEmail("otp"), data: { n: "\u0000" } }, undefined],
      ["/magiclink", { email: uniqueEmail("ml"), data: { n: "\udfff" } }, undefined],
    ];
    for (const [path, body, bearer] of bad) {
      const r = await call(srv, "POST", path, { body: body, token: bearer });
      assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
    }
    assert.deepEqual(await rows(srv), before, "a refused request left rows behind");

    smtp.mode = "refuse";
    for (
      const [path, bearer] of [["/invite", admin], ["/otp", undefined], ["/magiclink", undefined]]
    ) {
      const r = await call(srv, "POST", path!, {
        body: { email: uniqueEmail("down") },
        token: bearer,
      });
      assert.ok(r.status >= 400, `${path}: ${r.status}`);
      assert.deepEqual(await rows(srv), before, `${path} failed with ${r.status} but left rows`);
    }
    // A re-invitation that fails leaves the user as it was.
    smtp.mode = "accept";
    const invited = uniqueEmail("again");
    const first = await call(srv, "POST", "/invite", { body: { email: invited }, token: admin });
    assert.equal(first.status, 200);
    await smtp.waitForMail(invited);
    const [{ invited_at }] = await srv.db.query<{ invited_at: Date }>(
      `SELECT invited_at FROM ${srv.db.t("users")} WHERE email = $1`,
      [invited],
    );
    smtp.mode = "refuse";
    const second = await call(srv, "POST", "/invite", { body: { email: invited }, token: admin });
    assert.ok(second.status >= 400);
    const [after] = await srv.db.query<{ invited_at: Date }>(
      `SELECT invited_at FROM ${srv.db.t("users")} WHERE email = $1`,
      [invited],
    );
    assert.equal(new Date(after.invited_at).getTime(), new Date(invited_at).getTime());
  } finally {
    await srv.close();
    await smtp.close();
  }
});

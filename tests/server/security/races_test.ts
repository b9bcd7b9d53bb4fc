/**
 * Races answered like their sequential twins (issue 25 item 3): concurrent
 * requests that conflict on a unique index get the answer the request that
 * comes second gets when they run one after the other (GoTrue's 422 codes, an
 * update instead of a duplicate), never a 500. Run against PostgreSQL
 * (DATABASE_URL) for real concurrency; PGlite runs one statement at a time, so
 * there the checks before the writes decide.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

type Json = Record<string, unknown>;

/** A random E.164 number of the fictional 555-01xx range. */
function phoneNumber(): string {
  return `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
}

async function signUp(srv: TestServer): Promise<string> {
  const r = await call(srv, "POST", "/signup", {
    body: { email: uniqueEmail("racer"), password: "pw-123456" },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.body.access_token);
}

/** One winner, every other request the loser's answer. */
function assertOneWinner(results: { status: number; body: Json }[], code: string): void {
  const statuses = results.map((r) => `${r.status} ${r.body.error_code ?? ""}`.trim());
  assert.equal(results.filter((r) => r.status === 200).length, 1, statuses.join(", "));
  for (const r of results.filter((r) => r.status !== 200)) {
    assert.equal(r.status, 422, statuses.join(", "));
    assert.equal(r.body.error_code, code, statuses.join(", "));
  }
}

Deno.test("two users changing to the same phone at the same moment: one 200, the other 422 phone_exists", async () => {
  const srv = await startTestServer({
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    AUTHSVC_SMS_AUTOCONFIRM: "true",
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
  });
  try {
    for (let pair = 0; pair < 8; pair++) {
      const tokens = [await signUp(srv), await signUp(srv)];
      const phone = phoneNumber();
      const results = await Promise.all(
        tokens.map((t) => call(srv, "PUT", "/user", { body: { phone }, token: t })),
      );
      assertOneWinner(results, "phone_exists");
    }
  } finally {
    await srv.close();
  }
});

Deno.test("two anonymous users claiming the same e-mail at the same moment: one 200, the other 422 email_exists", async () => {
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
    AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: "1000/1h",
  });
  try {
    for (let pair = 0; pair < 8; pair++) {
      const tokens: string[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await call(srv, "POST", "/signup", { body: {} });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        tokens.push(String(r.body.access_token));
      }
      const email = uniqueEmail("claim");
      const results = await Promise.all(
        tokens.map((t) => call(srv, "PUT", "/user", { body: { email }, token: t })),
      );
      assertOneWinner(results, "email_exists");
    }
  } finally {
    await srv.close();
  }
});

Deno.test("two pending e-mail changes to one address confirmed at the same moment: one session, the other 422 email_exists", async () => {
  const srv = await startTestServer({});
  try {
    const admin = await srv.serviceRoleToken();
    for (let pair = 0; pair < 6; pair++) {
      const target = uniqueEmail("target");
      const hashes: string[] = [];
      for (let i = 0; i < 2; i++) {
        const email = uniqueEmail("mover");
        const made = await call(srv, "POST", "/admin/users", {
          body: {
            email,
            password: "pw-123456",
            email_confirm: true,
          },
          token: admin,
        });
        assert.equal(made.status, 200, JSON.stringify(made.body));
        const link = await call(srv, "POST", "/admin/generate_link", {
          body: {
            type: "email_change_new",
            email,
            new_email: target,
          },
          token: admin,
        });
        assert.equal(link.status, 200, JSON.stringify(link.body));
        hashes.push(String(link.body.hashed_token));
      }
      const results = await Promise.all(
        hashes.map((h) =>
          call(srv, "POST", "/verify", { body: { type: "email_change", token_hash: h } })
        ),
      );
      assertOneWinner(results, "email_exists");
      const [{ n }] = await srv.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${srv.db.t("users")} WHERE email = $1`,
        [target],
      );
      assert.equal(n, 1);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("concurrent POST /admin/users/{id} on one new id: every request succeeds, one user", async () => {
  const srv = await startTestServer({});
  try {
    const admin = await srv.serviceRoleToken();
    for (let round = 0; round < 3; round++) {
      const id = crypto.randomUUID();
      const email = uniqueEmail("same-id");
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          call(srv, "POST", `/admin/users/${id}`, {
            body: {
              email,
              user_metadata: { [`writer${i}`]: true },
            },
            token: admin,
          })),
      );
      for (const r of results) {
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.id, id);
        assert.equal(r.body.email, email);
      }
      const [{ n }] = await srv.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${srv.db.t("users")} WHERE id = $1`,
        [id],
      );
      assert.equal(n, 1);
      // Every writer's update landed (none was refused as a duplicate).
      const got = await call(srv, "GET", `/admin/users/${id}`, { token: admin });
      assert.equal(Object.keys(got.body.user_metadata as Json).length, 10);
    }
  } finally {
    await srv.close();
  }
});

Deno.test("concurrent admin creations with one e-mail: one 200, the others 422 email_exists", async () => {
  const srv = await startTestServer({});
  try {
    const admin = await srv.serviceRoleToken();
    for (let round = 0; round < 3; round++) {
      const email = uniqueEmail("dup");
      const results = await Promise.all(
        Array.from(
          { length: 6 },
          () => call(srv, "POST", "/admin/users", { body: { email }, token: admin }),
        ),
      );
      assertOneWinner(results, "email_exists");
    }
  } finally {
    await srv.close();
  }
});

Deno.test("concurrent factor enrolments with one friendly name: one 200, the others 422 mfa_factor_name_conflict", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const token = await signUp(srv);
    const results = await Promise.all(
      Array.from(
        { length: 5 },
        () =>
          call(srv, "POST", "/factors", {
            body: { factor_type: "totp", friendly_name: "my phone" },
            token: token,
          }),
      ),
    );
    assertOneWinner(results, "mfa_factor_name_conflict");
  } finally {
    await srv.close();
  }
});

Deno.test("two tabs updating different metadata keys at the same moment (PUT /user data): both keys kept", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const token = await signUp(srv);
    const keys = Array.from({ length: 6 }, (_, i) => `tab${i}`);
    const results = await Promise.all(
      keys.map((k) => call(srv, "PUT", "/user", { body: { data: { [k]: true } }, token: token })),
    );
    for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.body));
    const me = await call(srv, "GET", "/user", { token: token });
    assert.deepEqual(Object.keys(me.body.user_metadata as Json).sort(), keys);
  } finally {
    await srv.close();
  }
});

/**
 * Concurrency across two server processes on one PostgreSQL namespace, the
 * way replicas run: one refresh token exchanged many times at once (docs/server/api.md:
 * every success carries the same child), parallel sign-ups of one address
 * (one user), and the e-mail limit counted across both processes.
 */
import assert from "node:assert/strict";
import { type ServerProcess, startServerProcess } from "../helpers/process.ts";
import { postgresUrl, randomNamespace } from "../helpers/bench_process.ts";
import { dropNamespace, TEST_JWT_SECRET } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { openDb } from "../../server/db/db.ts";
import { jose } from "../../deps.ts";
import type { Db } from "../../server/db/db.ts";

const EMAIL_LIMIT = 5;

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

const tally = (xs: { status: number }[]) =>
  xs.reduce<Record<string, number>>((m, x) => ({ ...m, [x.status]: (m[x.status] ?? 0) + 1 }), {});

interface Pair {
  a: ServerProcess;
  b: ServerProcess;
  db: Db;
  smtp: TestSmtp;
  admin: string;
}

async function withTwoProcesses(fn: (p: Pair) => Promise<void>): Promise<void> {
  const ns = randomNamespace("cc");
  const smtp = await startSmtp();
  const env = {
    ...smtp.env,
    DATABASE_URL: postgresUrl(),
    AUTHSVC_DB_NAMESPACE: ns,
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_RATE_LIMIT_EMAIL_SENT: `${EMAIL_LIMIT}/1h`,
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "1000000/1h",
    AUTHSVC_RATE_LIMIT_SIGNUP: "1000000/1h",
    AUTHSVC_RATE_LIMIT_OTP: "1000000/1h",
    LOG_LEVEL: "error",
  };
  const db = await openDb({ url: postgresUrl(), dataDir: "", maxPoolSize: 2, prefix: `${ns}_` });
  let a: ServerProcess | undefined;
  let b: ServerProcess | undefined;
  try {
    a = await startServerProcess(env);
    b = await startServerProcess(env);
    const now = Math.floor(Date.now() / 1000);
    const admin = await new jose.SignJWT({
      role: "service_role",
      sub: "",
      iat: now,
      exp: now + 600,
    })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    await fn({ a, b, db, smtp, admin });
  } finally {
    await a?.stop();
    await b?.stop();
    await smtp.close();
    await dropNamespace(db, `${ns}_`).catch(() => {});
    await db.close();
  }
}

Deno.test("concurrency across two processes: refresh races, duplicate sign-ups, e-mail limit", async (t) => {
  await withTwoProcesses(async ({ a, b, db, smtp, admin }) => {
    await t.step(
      "one refresh token exchanged 20 times at once gives one child",
      async () => {
        const up = await call(a.url, "POST", "/signup", {
          email: "race@example.com",
          password: "Race-pw-123",
        });
        assert.equal(up.status, 200, JSON.stringify(up.body));
        const token = up.body.refresh_token as string;
        const results = await Promise.all(
          Array.from(
            { length: 20 },
            (_, i) =>
              call(i % 2 ? b.url : a.url, "POST", "/token?grant_type=refresh_token", {
                refresh_token: token,
              }),
          ),
        );
        const children = new Set(results.map((r) => r.body.refresh_token));
        console.log(
          `refresh race: 20 exchanges of one token over 2 processes, by status ${
            JSON.stringify(tally(results))
          }, ${children.size} distinct child token(s)`,
        );
        assert.deepEqual(tally(results), { 200: 20 });
        assert.equal(children.size, 1);
        const [child] = children as Set<string>;
        assert.notEqual(child, token);
        const rows = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${db.t("refresh_tokens")} r JOIN ${
            db.t("users")
          } u ON u.id = r.user_id WHERE u.email = 'race@example.com'`,
        );
        assert.equal(rows[0].n, 2, "exactly the parent and one child are stored");
        // Two hours later (every token's times moved back in the shared database) the child
        // rotates once; then the old parent is no longer the immediate previous token, and
        // the live token came long after its use: its reuse revokes the family, the newest
        // token included.
        await db.query(
          `UPDATE ${db.t("refresh_tokens")} SET created_at = created_at - interval '2 hours',
             updated_at = updated_at - interval '2 hours'`,
        );
        const next = await call(b.url, "POST", "/token?grant_type=refresh_token", {
          refresh_token: child,
        });
        assert.equal(next.status, 200);
        const reuse = await call(a.url, "POST", "/token?grant_type=refresh_token", {
          refresh_token: token,
        });
        assert.equal(reuse.status, 400);
        assert.equal(reuse.body.error_code, "refresh_token_already_used");
        const after = await call(b.url, "POST", "/token?grant_type=refresh_token", {
          refresh_token: next.body.refresh_token,
        });
        assert.equal(after.status, 400, "the family is revoked after reuse");
      },
    );

    await t.step("20 parallel sign-ups of one address make one user", async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          call(i % 2 ? b.url : a.url, "POST", "/signup", {
            email: "Twin@Example.com",
            password: "Twin-pw-123",
          })),
      );
      console.log(
        `duplicate sign-ups: 20 over 2 processes, by status ${JSON.stringify(tally(results))}`,
      );
      assert.equal(results.filter((r) => r.status === 200).length, 1);
      for (const r of results.filter((r) => r.status !== 200)) {
        assert.equal(r.status, 422, JSON.stringify(r.body));
        assert.equal(r.body.error_code, "user_already_exists");
      }
      const users = await db.query<{ id: string }>(
        `SELECT id FROM ${db.t("users")} WHERE email = 'twin@example.com'`,
      );
      assert.equal(users.length, 1);
      const ids = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${db.t("identities")} WHERE user_id = $1`,
        [users[0].id],
      );
      assert.equal(ids[0].n, 1);
    });

    await t.step(`the e-mail limit (${EMAIL_LIMIT}/h) holds across both processes`, async () => {
      const emails = Array.from({ length: 16 }, (_, i) => `limit-${i}@example.com`);
      for (const email of emails) {
        const r = await call(a.url, "POST", "/admin/users", {
          email,
          email_confirm: true,
        }, { authorization: `Bearer ${admin}` });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      const results = await Promise.all(
        emails.map((email, i) => call(i % 2 ? b.url : a.url, "POST", "/magiclink", { email })),
      );
      console.log(
        `e-mail limit: ${emails.length} magic links over 2 processes with ${EMAIL_LIMIT}/h, by status ${
          JSON.stringify(tally(results))
        }`,
      );
      assert.equal(results.filter((r) => r.status === 200).length, EMAIL_LIMIT);
      for (const r of results.filter((r) => r.status !== 200)) {
        assert.equal(r.status, 429, JSON.stringify(r.body));
        assert.equal(r.body.error_code, "over_email_send_rate_limit");
      }
      const sent = emails.filter((_, i) => results[i].status === 200);
      for (const to of sent) await smtp.waitForMail(to);
      assert.equal(smtp.received.length, EMAIL_LIMIT);
    });
  });
});

/**
 * Two real server processes on one PostgreSQL database (sharing state across
 * processes needs a database server, so this test always uses PostgreSQL:
 * DATABASE_URL, or the machine's default at 127.0.0.1:5432).
 */
import assert from "node:assert/strict";
import { startServerProcess } from "../../helpers/process.ts";
import { dropNamespace, freshNamespace, testDatabaseUrl } from "../../helpers/server.ts";
import { openDb } from "../../../server/db/db.ts";
import { startSmsFake } from "../../helpers/sms_fakes.ts";

async function status(url: string, init?: RequestInit): Promise<number> {
  const res = await fetch(url, { redirect: "manual", ...init });
  await res.body?.cancel();
  return res.status;
}

Deno.test("rate limits across two server processes: /verify and SMS_MAX_FREQUENCY counted once in the database, /token per process", async () => {
  const dbUrl = testDatabaseUrl() || "postgres://postgres@127.0.0.1:5432/test";
  const ns = freshNamespace();
  const sms = await startSmsFake("twilio");
  const env = {
    ...sms.env,
    AUTHSVC_EXTERNAL_PHONE_ENABLED: "true",
    DATABASE_URL: dbUrl,
    AUTHSVC_DB_NAMESPACE: ns,
    LOG_LEVEL: "error",
    AUTHSVC_RATE_LIMIT_VERIFY: "4/1h",
    AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "2/1h",
  };
  const a = await startServerProcess(env).catch(async (e) => {
    await sms.close();
    throw e;
  });
  const b = await startServerProcess(env).catch(async (e) => {
    await a.stop();
    await sms.close();
    throw e;
  });
  try {
    const verify = (p: { url: string }) => status(`${p.url}/verify?type=signup&token=nope`);
    // Four requests spread over both processes use up the one shared budget...
    for (const p of [a, b, a, b]) assert.notEqual(await verify(p), 429);
    // ...so both processes refuse the fifth.
    assert.equal(await verify(a), 429);
    assert.equal(await verify(b), 429);

    const res = await fetch(`${b.url}/verify?type=signup&token=nope`, { redirect: "manual" });
    const body = await res.json();
    assert.equal(res.status, 429);
    assert.equal(body.error_code, "over_request_rate_limit");
    assert.ok(Number(res.headers.get("retry-after")) > 0);

    // /token is limited in each process (documented): a's budget does not touch b's.
    const grant = (p: { url: string }) =>
      status(`${p.url}/token?grant_type=refresh_token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ refresh_token: "unknown" }),
      });
    assert.notEqual(await grant(a), 429);
    assert.notEqual(await grant(a), 429);
    assert.equal(await grant(a), 429);
    assert.notEqual(await grant(b), 429);

    // A code texted through one process: the other refuses a second within SMS_MAX_FREQUENCY.
    const otp = (p: { url: string }) =>
      fetch(`${p.url}/otp`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ phone: "+15556660001" }),
      });
    const first = await otp(a);
    assert.equal(first.status, 200, await first.text());
    const second = await otp(b);
    const refused = await second.json();
    assert.equal(second.status, 429);
    assert.equal(refused.error_code, "over_sms_send_rate_limit");
    assert.equal(sms.messagesTo("15556660001").length, 1);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await sms.close();
    const db = await openDb({ url: dbUrl, dataDir: "", maxPoolSize: 1, prefix: `${ns}_` });
    try {
      await dropNamespace(db, `${ns}_`);
    } finally {
      await db.close();
    }
  }
});

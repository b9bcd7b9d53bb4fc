import assert from "node:assert/strict";
import { errorResponse, statusOf } from "../../../server/api/errors.ts";
import { startTestServer } from "../../helpers/server.ts";
import type { Clock } from "../../../server/auth/clock.ts";

class TestClock implements Clock {
  t = Date.now();
  now() {
    return new Date(this.t);
  }
}

async function withUser<T>(
  env: Record<string, string>,
  fn: (ctx: {
    srv: Awaited<ReturnType<typeof startTestServer>>;
    userId: string;
    clock: TestClock;
  }) => Promise<T>,
) {
  const clock = new TestClock();
  const srv = await startTestServer(env, { clock });
  try {
    const u = await srv.services.users.create({ email: "otp@example.com" });
    return await fn({ srv, userId: u.id, clock });
  } finally {
    await srv.close();
  }
}

Deno.test("one-time tokens: link and code are single use, stored only as hashes", async () => {
  await withUser({}, async ({ srv, userId }) => {
    const otp = srv.services.otp;
    const t = await otp.issue({
      userId,
      type: "confirmation",
      recipient: "otp@example.com",
      ttlSec: 600,
    });
    assert.match(t.code, /^\d{6}$/);
    assert.ok(t.link && t.link.length >= 40);
    const rows = await srv.db.query<Record<string, unknown>>(
      `SELECT * FROM ${srv.db.t("one_time_tokens")}`,
    );
    const dump = JSON.stringify(rows);
    assert.ok(!dump.includes(t.link!), "link secret is not stored");
    assert.ok(!dump.includes(t.code), "code is not stored");
    const row = await otp.verifyLink(["confirmation"], t.link!);
    assert.equal(row.user_id, userId);
    await assert.rejects(otp.verifyLink(["confirmation"], t.link!), /expired or is invalid/);
    await assert.rejects(
      otp.verifyCode(["confirmation"], "otp@example.com", t.code),
      /expired or is invalid/,
    );
  });
});

Deno.test("one-time tokens: wrong codes are bounded, expiry holds, new token replaces old", async () => {
  await withUser({}, async ({ srv, userId, clock }) => {
    const otp = srv.services.otp;
    const first = await otp.issue({ userId, type: "sms", recipient: "15550001", ttlSec: 60 });
    const t = await otp.issue({
      userId,
      type: "sms",
      recipient: "15550001",
      ttlSec: 60,
      link: false,
    });
    assert.equal(t.link, undefined);
    await assert.rejects(
      otp.verifyCode(["sms"], "15550001", first.code === t.code ? "x" : first.code),
    );
    // wrong type or recipient does not match
    await assert.rejects(otp.verifyCode(["recovery"], "15550001", t.code));
    await assert.rejects(otp.verifyCode(["sms"], "15550002", t.code));
    const ok = await otp.verifyCode(["sms"], "15550001", t.code);
    assert.equal(ok.user_id, userId);

    // 3 wrong attempts with maxAttempts 3 kill the code
    const u = await otp.issue({ userId, type: "sms", recipient: "15550001", ttlSec: 60 });
    const wrong = u.code === "000000" ? "111111" : "000000";
    for (let i = 0; i < 3; i++) {
      await assert.rejects(otp.verifyCode(["sms"], "15550001", wrong, { maxAttempts: 3 }));
    }
    await assert.rejects(otp.verifyCode(["sms"], "15550001", u.code, { maxAttempts: 3 }));

    // expiry
    const e = await otp.issue({
      userId,
      type: "recovery",
      recipient: "otp@example.com",
      ttlSec: 60,
    });
    clock.t += 61_000;
    await assert.rejects(otp.verifyLink(["recovery"], e.link!), /expired/);
  });
});

Deno.test("send limits: per recipient interval and hourly cap, failed sends do not count", async () => {
  await withUser(
    { AUTHSVC_RATE_LIMIT_EMAIL_SENT: "3", AUTHSVC_SMTP_MAX_FREQUENCY: "60" },
    async ({ srv, clock }) => {
      const sl = srv.services.sendLimits;
      const req = {
        channel: "email" as const,
        recipient: "a@x.io",
        kind: "confirmation",
        intervalSec: 60,
      };
      await assert.rejects(sl.send(req, () => Promise.reject(new Error("smtp down"))), /smtp down/);
      assert.equal(await sl.send(req, () => Promise.resolve(1)), 1);
      const err = await sl.send(req, () => Promise.resolve(2)).catch((e) => e);
      assert.equal(statusOf(err), 429);
      assert.equal(err.errorCode, "over_email_send_rate_limit");
      assert.equal(errorResponse(err).headers.get("Retry-After"), "60");
      // another kind to the same address is its own slot
      await sl.send({ ...req, kind: "recovery" }, () => Promise.resolve(3));
      clock.t += 61_000;
      await sl.send(req, () => Promise.resolve(4));
      // the hourly cap (3) is reached over all recipients
      const capped = await sl.send({ ...req, recipient: "b@x.io" }, () => Promise.resolve(5))
        .catch((e) => e);
      assert.equal(statusOf(capped), 429);
      assert.equal(capped.message, "Email rate limit exceeded");
      // SMS is counted apart
      await sl.send(
        { channel: "sms", recipient: "1555", kind: "sms", intervalSec: 60 },
        () => Promise.resolve(6),
      );
      const sms = await sl.send(
        { channel: "sms", recipient: "1555", kind: "sms", intervalSec: 60 },
        () => Promise.resolve(7),
      ).catch((e) => e);
      assert.equal(sms.errorCode, "over_sms_send_rate_limit");
    },
  );
});

Deno.test("send limits: rows older than every limit's look-back are pruned, newer ones kept", async () => {
  await withUser({}, async ({ srv, clock }) => {
    const sl = srv.services.sendLimits;
    const t = srv.db.t("send_log");
    const ago = (sec: number) => new Date(clock.t - sec * 1000);
    await srv.db.query(
      `INSERT INTO ${t} (channel, recipient, kind, sent_at) VALUES
         ('email', 'old@x.io', 'recovery', $1), ('email', 'recent@x.io', 'recovery', $2)`,
      [ago(3601), ago(1800)], // the longest look-back by default: the hourly window
    );
    await sl.send(
      { channel: "email", recipient: "new@x.io", kind: "recovery", intervalSec: 60 },
      () => Promise.resolve(),
    );
    const rows = await srv.db.query<{ recipient: string }>(
      `SELECT recipient FROM ${t} ORDER BY recipient`,
    );
    assert.deepEqual(rows.map((r) => r.recipient), ["new@x.io", "recent@x.io"]);
  });
});

Deno.test("one-time tokens: an issue undone with restore leaves the previous code working", async () => {
  await withUser({}, async ({ srv, userId }) => {
    const otp = srv.services.otp;
    const first = await otp.issue({ userId, type: "sms", recipient: "15550002", ttlSec: 60 });
    const before = await otp.snapshot(userId, "sms");
    const second = await otp.issue({ userId, type: "sms", recipient: "15550002", ttlSec: 60 });
    assert.equal(await otp.userIdForRecipient("15550002", ["sms"]), userId);
    await otp.restore(second.id, before);
    await assert.rejects(otp.verifyCode(["sms"], "15550002", second.code), /expired or is invalid/);
    const row = await otp.verifyCode(["sms"], "15550002", first.code);
    assert.equal(row.id, first.id);
    assert.equal(await otp.userIdForRecipient("15550002", ["sms"]), null);
  });
});

/**
 * No account enumeration on /signup, /recover, /otp, /magiclink and /resend:
 * an address with an account and one without get the same status, the same
 * body shape, the same 429 (message and Retry-After) on a repeat, and an
 * answer that waits about as long as sending a mail takes.
 */
import assert from "node:assert/strict";
import { AnswerTiming } from "../../../server/mail/timing.ts";
import { confirmedUser, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

/** The answer with every string value replaced, to compare shapes. */
function shape(r: { status: number; body: Record<string, unknown>; headers: Headers }) {
  const body = JSON.stringify(r.body, (_k, v) => typeof v === "string" ? "s" : v);
  return `${r.status} retry-after=${r.headers.get("retry-after")} ${body}`;
}

/** A clock that stands still, so two 429s name the same wait. */
const stillClock = () => {
  const t = new Date();
  return { now: () => new Date(t) };
};

Deno.test("enumeration: known and unknown addresses get the same answers, 429s included", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    await confirmedUser(srv, "known@example.com");
    await confirmedUser(srv, "pending@example.com", "pw-123456", false);
    const cases: [string, Record<string, unknown>, string, string][] = [
      ["/recover", {}, "known@example.com", "nobody1@example.com"],
      ["/resend", { type: "signup" }, "pending@example.com", "nobody3@example.com"],
    ];
    for (const [path, extra, known, unknown] of cases) {
      const k1 = await call(srv, "POST", path, { body: { email: known, ...extra } });
      const u1 = await call(srv, "POST", path, { body: { email: unknown, ...extra } });
      assert.equal(shape(k1), shape(u1), `${path} first request`);
      assert.equal(k1.status, 200);
      await smtp.waitForMail(known);
      const k2 = await call(srv, "POST", path, { body: { email: known, ...extra } });
      const u2 = await call(srv, "POST", path, { body: { email: unknown, ...extra } });
      assert.equal(k2.status, 429, `${path}: ${JSON.stringify(k2.body)}`);
      assert.equal(shape(k2), shape(u2), `${path} repeated request`);
      assert.equal(k2.body.msg, u2.body.msg, path);
    }
    assert.equal(smtp.count("nobody1@example.com"), 0);
    assert.equal(smtp.count("nobody3@example.com"), 0);
    // a refused unknown address counts nothing against the hourly cap
    const sent = await srv.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${srv.db.t("send_log")} WHERE channel = 'email'`,
    );
    // (/otp with create_user false refuses an unknown address with 422
    // otp_disabled, as GoTrue does: tests/conformance/otp_test.ts)
    assert.equal(sent[0].n, 2);
  }, { clock: stillClock() });
});

Deno.test("enumeration: a new user's sign-in mail and a confirmed user's share one interval", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    await confirmedUser(srv, "old@example.com");
    for (const email of ["old@example.com", "brand-new@example.com"]) {
      const a = await call(srv, "POST", "/magiclink", { body: { email } });
      assert.equal(a.status, 200);
      await smtp.waitForMail(email);
    }
    const known = await call(srv, "POST", "/magiclink", { body: { email: "old@example.com" } });
    const fresh = await call(srv, "POST", "/magiclink", {
      body: { email: "brand-new@example.com" },
    });
    assert.equal(known.status, 429);
    assert.equal(shape(known), shape(fresh));
  }, { clock: stillClock() });
});

Deno.test("enumeration: answers without a mail wait as long as sending one takes", async () => {
  await withEmail(
    { AUTHSVC_SMTP_MAX_FREQUENCY: "0", AUTHSVC_SMTP_LINK_FREQUENCY: "0" },
    async ({ srv }) => {
      const timing = srv.services.mailer.timing;
      const waits: number[] = [];
      timing.sleep = (ms) => {
        waits.push(ms);
        return Promise.resolve();
      };
      await confirmedUser(srv, "k@example.com");
      await confirmedUser(srv, "p@example.com", "pw-123456", false);
      const token = await call(srv, "POST", "/token?grant_type=password", {
        body: {
          email: "k@example.com",
          password: "pw-123456",
        },
      });
      // one real mail of each kind, so there is a send time to imitate
      await call(srv, "POST", "/recover", { body: { email: "k@example.com" } });
      await call(srv, "POST", "/otp", { body: { email: "k@example.com" } });
      await call(srv, "POST", "/resend", { body: { type: "signup", email: "p@example.com" } });
      await call(srv, "PUT", "/user", {
        body: { email: "k2@example.com" },
        token: String(token.body.access_token),
      });
      for (const a of ["recovery", "magiclink", "confirmation", "email_change_new"]) {
        assert.ok(timing.expected(a) > 0, a);
      }
      assert.deepEqual(waits, [], "sending a mail waits for nothing");

      const quiet: [string, Record<string, unknown>][] = [
        ["/recover", { email: "u1@example.com" }],
        ["/resend", { type: "signup", email: "u3@example.com" }],
        ["/resend", { type: "signup", email: "k@example.com" }], // already confirmed
        ["/resend", { type: "email_change", email: "u4@example.com" }],
        ["/signup", { email: "k@example.com", password: "pw-123456" }], // already confirmed
      ];
      for (const [path, body] of quiet) {
        waits.length = 0;
        const r = await call(srv, "POST", path, { body: body });
        assert.equal(r.status, 200, `${path} ${JSON.stringify(r.body)}`);
        assert.ok(waits.length > 0 && waits.every((w) => w > 0), `${path} ${JSON.stringify(body)}`);
      }
    },
  );
});

Deno.test("answer timing: the median of recent sends, with jitter, minus the time already spent", async () => {
  const t = new AnswerTiming();
  let clock = 1000;
  const waits: number[] = [];
  t.now = () => clock;
  t.sleep = (ms) => {
    waits.push(ms);
    return Promise.resolve();
  };
  t.random = () => 0.5; // no jitter
  await t.pad("recovery", clock);
  assert.deepEqual(waits, [], "nothing to imitate before the first send");
  for (const ms of [900, 100, 120, 110]) t.observe("recovery", ms); // a cold first send
  assert.equal(t.expected("recovery"), 120);
  clock = 1030;
  await t.pad("recovery", 1000);
  assert.deepEqual(waits, [90]);
  t.observe("stall", 60_000);
  assert.equal(t.expected("stall"), 3000, "a stalled send is imitated only up to 3 s");
  t.random = () => 0;
  waits.length = 0;
  await t.pad("recovery", clock);
  assert.deepEqual(waits, [120 * 0.85]);
});

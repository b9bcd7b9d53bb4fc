import assert from "node:assert/strict";
import { createApp } from "../../../server/app.ts";
import { fragment, local, openLink, withEmail } from "./_helpers.ts";
import { call } from "../../helpers/http.ts";

Deno.test("limits hold across server processes sharing the database", async () => {
  await withEmail({ AUTHSVC_RATE_LIMIT_EMAIL_SENT: "2" }, async ({ srv, smtp }) => {
    // a second server on the same database and tables, as another process would be
    const other = await createApp(srv.config, { db: srv.db, migrate: false });
    try {
      const admin = await srv.serviceRoleToken();
      for (const email of ["p1@example.com", "p2@example.com", "p3@example.com"]) {
        await call(srv, "POST", "/admin/users", {
          body: {
            email,
            password: "pw-123456",
            email_confirm: true,
          },
          token: admin,
        });
      }
      const viaA = await call(srv, "POST", "/magiclink", { body: { email: "p1@example.com" } });
      assert.equal(viaA.status, 200);
      await smtp.waitForMail("p1@example.com");
      const req = (email: string) =>
        new Request("http://x/magiclink", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email }),
        });
      const viaB = await other.fetch(req("p1@example.com"), "127.0.0.2");
      assert.equal(viaB.status, 429);
      assert.equal((await viaB.json()).error_code, "over_email_send_rate_limit");
      // the hourly cap (2) counts the mails of both servers
      assert.equal((await other.fetch(req("p2@example.com"), "127.0.0.2")).status, 200);
      await smtp.waitForMail("p2@example.com");
      const capped = await call(srv, "POST", "/magiclink", { body: { email: "p3@example.com" } });
      assert.equal(capped.status, 429);
      assert.ok(capped.headers.get("retry-after"));
      await smtp.expectNoMail("p3@example.com");
    } finally {
      await other.close();
    }
  });
});

Deno.test("verify: a sign-up confirmed by POST needs a password when the user has none", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    await call(srv, "POST", "/otp", { body: { email: "nopw@example.com" } });
    const mail = await smtp.waitForMail("nopw@example.com");
    const without = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "nopw@example.com",
        token: mail.code,
      },
    });
    assert.equal(without.status, 422);
    assert.match(String(without.body.msg), /password/);
    const weak = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "nopw@example.com",
        token: mail.code,
        password: "1",
      },
    });
    assert.equal(weak.status, 422);
    assert.equal(weak.body.error_code, "weak_password");
    const ok = await call(srv, "POST", "/verify", {
      body: {
        type: "signup",
        email: "nopw@example.com",
        token: mail.code,
        password: "chosen-pw",
      },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const login = await call(srv, "POST", "/token?grant_type=password", {
      body: {
        email: "nopw@example.com",
        password: "chosen-pw",
      },
    });
    assert.equal(login.status, 200);
  });
});

Deno.test("limits: concurrent requests for one address send exactly one mail", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    const admin = await srv.serviceRoleToken();
    await call(srv, "POST", "/admin/users", {
      body: {
        email: "race@example.com",
        password: "pw-123456",
        email_confirm: true,
      },
      token: admin,
    });
    const results = await Promise.all(
      Array.from(
        { length: 5 },
        () => call(srv, "POST", "/recover", { body: { email: "race@example.com" } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 429, 429, 429, 429]);
    const mail = await smtp.waitForMail("race@example.com");
    await smtp.expectNoMail("race@example.com");
    assert.equal(smtp.count("race@example.com"), 1);
    // the one mail that went out carries a working link (the refused requests issued nothing)
    const link = await openLink(local(srv, mail.link));
    assert.equal(fragment(link.location!).type, "recovery");
  });
});

import assert from "node:assert/strict";
import { statusOf } from "../../../server/api/errors.ts";
import { startTestServer } from "../../helpers/server.ts";
import { startSmtp } from "../../helpers/smtp.ts";

Deno.test("mailer: HTML and text parts, From, escaped variables, mail_sent event", async () => {
  const smtp = await startSmtp();
  const srv = await startTestServer({
    ...smtp.env,
    AUTHSVC_SMTP_SENDER_NAME: "Acme Auth",
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION: "Welcome to Acme",
  });
  try {
    const kinds: unknown[] = [];
    srv.services.events.on("mail_sent", (a) => kinds.push(a.kind));
    await srv.services.mailer.send({
      kind: "confirmation",
      to: "Mixed@Example.com",
      vars: { ConfirmationURL: "http://x.test/verify?token=a&type=signup", Token: "123456" },
    });
    const m = await smtp.waitForMail("mixed@example.com");
    assert.equal(m.subject, "Welcome to Acme");
    assert.match(m.from, /Acme Auth.*admin@example\.com/);
    assert.equal(m.link, "http://x.test/verify?token=a&type=signup");
    assert.equal(m.code, "123456");
    assert.match(m.html, /href="http:\/\/x\.test\/verify\?token=a&amp;type=signup"/);
    assert.deepEqual(kinds, ["confirmation"]);

    // a notification is off by default, on when its switch is set (other server)
    const off = await srv.services.mailer.notify("password_changed", {
      email: "n@example.com",
      raw_user_meta_data: {},
    });
    assert.equal(off, false);
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("mailer: custom template fetched once and cached, values HTML-escaped; default when down", async () => {
  const smtp = await startSmtp();
  let hits = 0;
  let up = true;
  const ac = new AbortController();
  const tpl = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} },
    () => {
      hits++;
      return up
        ? new Response(
          `<p>Hi {{ .Data.name }} ({{ .Email }}), <a href="{{ .ConfirmationURL }}">go</a> {{.Token}}</p>`,
        )
        : new Response("nope", { status: 500 });
    },
  );
  const url = `http://127.0.0.1:${tpl.addr.port}/magic.html`;
  const srv = await startTestServer({
    ...smtp.env,
    AUTHSVC_MAILER_TEMPLATES_MAGIC_LINK: url,
    AUTHSVC_MAILER_TEMPLATES_RECOVERY: `http://127.0.0.1:${tpl.addr.port}/down`,
    AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: "true",
  });
  try {
    const vars = {
      ConfirmationURL: "http://x.test/v?token=t1&type=magiclink",
      Token: "654321",
      Email: "e@example.com",
      Data: { name: "<script>alert(1)</script>" },
    };
    await srv.services.mailer.send({ kind: "magic_link", to: "e@example.com", vars });
    await srv.services.mailer.send({ kind: "magic_link", to: "e@example.com", vars });
    const m = await smtp.waitForMail("e@example.com");
    assert.equal(m.subject, "Your Magic Link");
    assert.ok(m.html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert.ok(!m.html.includes("<script>"));
    assert.match(m.text, /go: http:\/\/x\.test\/v\?token=t1&type=magiclink/);
    assert.equal(m.code, "654321");
    await smtp.waitForMail("e@example.com");
    assert.equal(hits, 1, "template fetched once");

    up = false;
    await srv.services.mailer.send({ kind: "recovery", to: "r@example.com", vars });
    const r = await smtp.waitForMail("r@example.com");
    assert.match(r.text, /Reset Password/);
    assert.equal(r.link, vars.ConfirmationURL);

    const sent = await srv.services.mailer.notify("password_changed", {
      email: "n@example.com",
      raw_user_meta_data: {},
    });
    assert.equal(sent, true);
    const n = await smtp.waitForMail("n@example.com");
    assert.equal(n.subject, "Your password has been changed");
    assert.match(n.text, /n@example\.com/);
  } finally {
    await srv.close();
    await smtp.close();
    ac.abort();
    await tpl.finished;
  }
});

Deno.test("mailer: SMTP refusing is a 500 naming the mail, and does not count against limits", async () => {
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...smtp.env, AUTHSVC_RATE_LIMIT_EMAIL_SENT: "1" });
  try {
    smtp.mode = "refuse";
    const err = await srv.services.mailer.send({
      kind: "invite",
      to: "i@example.com",
      vars: {},
      intervalSec: 60,
    }).catch((e) => e);
    assert.equal(statusOf(err), 500);
    assert.equal(err.errorCode, "email_send_failed");
    assert.equal(err.message, "Error sending invite email");
    smtp.mode = "accept";
    await srv.services.mailer.send({
      kind: "invite",
      to: "i@example.com",
      vars: {},
      intervalSec: 60,
    });
    await smtp.waitForMail("i@example.com");
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("mailer: without SMTP_HOST mails are logged (links with the development switch)", async () => {
  const srv = await startTestServer({ LOG_LEVEL: "info", AUTHSVC_MAILER_LOG_LINKS: "true" });
  try {
    assert.ok(srv.services.mailer.logOnly);
    await srv.services.mailer.send({
      kind: "magic_link",
      to: "log@example.com",
      vars: { ConfirmationURL: "http://x.test/verify?token=abc&type=magiclink" },
    });
    const all = srv.logs.join("\n");
    assert.match(all, /SMTP_HOST is not set/);
    const line = srv.logs.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith("mail not sent"));
    assert.equal(line.to, "log@example.com");
    assert.equal(line.subject, "Your Magic Link");
    assert.deepEqual(line.links, ["http://x.test/verify?token=abc&type=magiclink"]);
  } finally {
    await srv.close();
  }
});

Deno.test("mailer: a stalled mail server is a 500 after SMTP_TIMEOUT, not a hung request", async () => {
  const smtp = await startSmtp();
  const srv = await startTestServer({ ...smtp.env, AUTHSVC_SMTP_TIMEOUT: "1" });
  try {
    smtp.mode = "stall";
    const err = await srv.services.mailer.send({
      kind: "magic_link",
      to: "s@example.com",
      vars: {},
    })
      .catch((e) => e);
    assert.equal(statusOf(err), 500);
    assert.equal(err.message, "Error sending magic link email");
    smtp.mode = "accept";
    await srv.services.mailer.send({ kind: "magic_link", to: "s@example.com", vars: {} });
    await smtp.waitForMail("s@example.com");
  } finally {
    await srv.close();
    await smtp.close();
  }
});

Deno.test("mailer: an invite's metadata and address are escaped in the HTML part, plain in the text part", async () => {
  const ac = new AbortController();
  const tpl = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} },
    () =>
      new Response(
        `<p>Welcome {{ .Data.name }} &lt;{{ .Email }}&gt;</p><p><a href="{{ .ConfirmationURL }}">Join</a></p>`,
      ),
  );
  const smtp = await startSmtp();
  const srv = await startTestServer({
    ...smtp.env,
    AUTHSVC_MAILER_TEMPLATES_INVITE: `http://127.0.0.1:${tpl.addr.port}/invite.html`,
    AUTHSVC_MAILER_SUBJECTS_INVITE: "Join us, {{ .Data.name }}",
  });
  try {
    const email = "o'neil&co@example.com";
    const r = await srv.fetch("/invite", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${await srv.serviceRoleToken()}`,
      },
      body: JSON.stringify({ email, data: { name: "<script>alert(1)</script>" } }),
    });
    assert.equal(r.status, 200, await r.text());
    const m = await smtp.waitForMail(email);
    assert.ok(!m.html.includes("<script>"), m.html);
    assert.ok(m.html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert.ok(m.html.includes("o&#39;neil&amp;co@example.com"));
    assert.match(m.text, /Welcome <script>alert\(1\)<\/script> <o'neil&co@example\.com>/);
    assert.match(m.text, /Join: http:\/\/localhost:8081\/verify\?token=/);
    assert.equal(m.subject, "Join us, <script>alert(1)</script>");
  } finally {
    await srv.close();
    await smtp.close();
    ac.abort();
    await tpl.finished;
  }
});

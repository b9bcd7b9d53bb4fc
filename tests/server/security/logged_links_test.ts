/**
 * Attack on a server started without SMTP_HOST (issue 38, item 8): it wrote
 * every mail's links to the log, so whoever reads the logs (a log
 * aggregator, a support engineer, a leaked log file) could ask for a magic
 * link for anyone and sign in as them. The links now reach the log only with
 * the development switch AUTHSVC_MAILER_LOG_LINKS; the console's development
 * inbox keeps showing them.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { ConsoleBrowser, createOperator } from "./_console.ts";

async function requestMagicLink(srv: TestServer, email: string): Promise<void> {
  const res = await srv.fetch("/magiclink", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email }),
  });
  assert.equal(res.status, 200, await res.text());
}

/** The links the log lines of the mail to `email` carry. */
function loggedLinks(srv: TestServer, email: string): string[] {
  return srv.logs.map((l) => JSON.parse(l))
    .filter((l) => l.msg.startsWith("mail not sent") && l.to === email)
    .flatMap((l) => l.links ?? []);
}

Deno.test("a reader of the logs of a server without SMTP_HOST signs in with a logged magic link", async () => {
  const env = { LOG_LEVEL: "info", AUTHSVC_CONSOLE_ENABLED: "true" };
  const srv = await startTestServer(env);
  try {
    const email = `victim-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await createOperator(srv, email, "victim-password-1");
    await requestMagicLink(srv, email);
    const line = srv.logs.map((l) => JSON.parse(l)).find((l) =>
      l.msg.startsWith("mail not sent") && l.to === email
    );
    assert.ok(line, "the mail is still named in the log");
    assert.equal(line.subject, "Your Magic Link");
    assert.deepEqual(loggedLinks(srv, email), [], "no link in the log");
    assert.ok(!srv.logs.join("\n").includes("token="), "no token anywhere in the log");
    assert.match(srv.logs.join("\n"), /AUTHSVC_MAILER_LOG_LINKS/, "the start says how to see them");

    // The development inbox (console, no SMTP_HOST) still shows the link to the operator.
    const op = new ConsoleBrowser(srv);
    await op.signIn(email, "victim-password-1");
    const inbox = await op.fetch("/console/api/inbox");
    const { mails } = await inbox.json();
    assert.ok(mails.some((m: { links: string[] }) => m.links.some((l) => l.includes("token="))));
  } finally {
    await srv.close();
  }

  // With the development switch, the log carries the link, and it signs in.
  const dev = await startTestServer({ ...env, AUTHSVC_MAILER_LOG_LINKS: "true" });
  try {
    const email = `dev-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await createOperator(dev, email, "dev-password-1");
    await requestMagicLink(dev, email);
    const [link] = loggedLinks(dev, email);
    assert.ok(link, "the link is in the log");
    const verify = new URL(link);
    const res = await dev.fetch(`${verify.pathname}${verify.search}`, { redirect: "manual" });
    await res.body?.cancel();
    assert.equal(res.status, 303);
    assert.match(res.headers.get("location") ?? "", /access_token=/);
  } finally {
    await dev.close();
  }
});

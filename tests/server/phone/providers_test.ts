import assert from "node:assert/strict";
import { readConfig } from "../../../server/config/mod.ts";
import { createSmsProvider, renderSmsTemplate, SmsSendError } from "../../../server/sms/mod.ts";
import { statusOf } from "../../../server/api/errors.ts";
import { BASE_ENV } from "../../helpers/server.ts";
import { SMS_FAKE_PROVIDERS, type SmsFake, startSmsFake } from "../../helpers/sms_fakes.ts";

function providerFor(fake: SmsFake, extra: Record<string, string> = {}) {
  const { config } = readConfig({ ...BASE_ENV, ...fake.env, ...extra });
  return createSmsProvider(config.sms, fake.provider);
}

async function sendError(p: Promise<unknown>): Promise<SmsSendError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof SmsSendError, `expected SmsSendError, got ${e}`);
    return e;
  }
  assert.fail("expected the send to fail");
}

for (const name of SMS_FAKE_PROVIDERS) {
  Deno.test(`${name}: a message reaches the gateway in its documented format`, async () => {
    const fake = await startSmsFake(name);
    try {
      const p = providerFor(fake);
      const r = await p.send({ to: "15551234567", text: "Your code is 123456" });
      assert.ok(r.messageId.length > 0);
      assert.deepEqual(fake.violations, []);
      assert.equal(fake.messages.length, 1);
      assert.equal(fake.messages[0].to, "15551234567");
      assert.equal(fake.messages[0].text, "Your code is 123456");
      assert.equal(fake.lastCode("+15551234567"), "123456");
      // non-ASCII text is accepted too (Vonage needs type=unicode for it)
      await p.send({ to: "447700900123", text: "Dein Code lautet 654321 ✓" });
      assert.deepEqual(fake.violations, []);
      assert.equal(fake.lastCode("447700900123"), "654321");
    } finally {
      await fake.close();
    }
  });

  Deno.test(`${name}: the gateway's refusals become clear errors with its message`, async () => {
    const fake = await startSmsFake(name);
    try {
      const p = providerFor(fake);
      const msg = { to: "15551234567", text: "Your code is 123456" };
      fake.failWith("recipient", 1);
      const rec = await sendError(p.send(msg));
      assert.equal(statusOf(rec), 422); // GoTrue's answer to any failed send
      assert.equal(rec.situation, "recipient_refused");
      assert.equal(rec.errorCode, "sms_send_failed");
      assert.match(rec.message, new RegExp(`via ${name}: .+`));
      fake.failWith("auth", 1);
      const auth = await sendError(p.send(msg));
      assert.equal(statusOf(auth), 422); // GoTrue's answer to any failed send
      assert.equal(auth.situation, "upstream_failed");
      assert.match(
        auth.message,
        /Authenticate|incorrect access_key|Invalid login details|Bad Credentials/,
      );
      fake.failWith("server", 1);
      const srv = await sendError(p.send(msg));
      assert.equal(statusOf(srv), 422); // GoTrue's answer to any failed send
      assert.equal(srv.situation, "upstream_failed");
      assert.equal(fake.messages.length, 0);
      // after the failures, the next message goes out
      await p.send(msg);
      assert.equal(fake.messages.length, 1);
      assert.deepEqual(fake.violations, []);
    } finally {
      await fake.close();
    }
  });

  Deno.test(`${name}: wrong credentials are refused by the fake and reported`, async () => {
    const fake = await startSmsFake(name);
    try {
      const wrong: Record<string, string> = {
        twilio: "AUTHSVC_SMS_TWILIO_AUTH_TOKEN",
        messagebird: "AUTHSVC_SMS_MESSAGEBIRD_ACCESS_KEY",
        textlocal: "AUTHSVC_SMS_TEXTLOCAL_API_KEY",
        vonage: "AUTHSVC_SMS_VONAGE_API_SECRET",
      };
      const p = providerFor(fake, { [wrong[name]]: "not-the-secret" });
      const e = await sendError(p.send({ to: "15551234567", text: "Your code is 1234" }));
      assert.equal(statusOf(e), 422); // GoTrue's answer to any failed send
      assert.equal(e.situation, "upstream_failed");
      assert.ok(!e.message.includes("not-the-secret"), "the secret never appears in the error");
      assert.equal(fake.violations.length, 1);
      assert.equal(fake.messages.length, 0);
    } finally {
      await fake.close();
    }
  });

  Deno.test(`${name}: a gateway that hangs or is down is a clear error`, async () => {
    const fake = await startSmsFake(name);
    try {
      const p = providerFor(fake);
      fake.hang();
      const slow = await sendError(p.send({ to: "15551234567", text: "Your code is 1234" }));
      assert.equal(statusOf(slow), 422); // GoTrue's answer to any failed send
      assert.equal(slow.situation, "upstream_timeout");
      assert.match(slow.message, /did not answer within 1 s/);
      fake.resume();
      await fake.stop();
      const down = await sendError(p.send({ to: "15551234567", text: "Your code is 1234" }));
      assert.equal(statusOf(down), 422); // GoTrue's answer to any failed send
      assert.equal(down.situation, "upstream_failed");
      assert.match(down.message, /could not be reached/);
    } finally {
      await fake.close();
    }
  });
}

Deno.test("twilio: a sender number goes as From, a messaging service SID as MessagingServiceSid", async () => {
  const byNumber = await startSmsFake("twilio", { twilioSender: "number" });
  const bySid = await startSmsFake("twilio");
  try {
    await providerFor(byNumber).send({ to: "15551234567", text: "Your code is 111111" });
    await providerFor(bySid).send({ to: "15551234567", text: "Your code is 222222" });
    assert.deepEqual(byNumber.violations, []);
    assert.deepEqual(bySid.violations, []);
    assert.equal(byNumber.messages[0].from, "+15005550006");
    assert.match(bySid.messages[0].from, /^MG/);
  } finally {
    await byNumber.close();
    await bySid.close();
  }
});

Deno.test("an API URL with a trailing slash is joined correctly", async () => {
  const fake = await startSmsFake("vonage");
  try {
    const p = providerFor(fake, { AUTHSVC_SMS_VONAGE_API_URL: `${fake.url}/` });
    await p.send({ to: "15551234567", text: "Your code is 333333" });
    assert.deepEqual(fake.violations, []);
    assert.equal(fake.messages.length, 1);
  } finally {
    await fake.close();
  }
});

Deno.test("SMS_TEMPLATE: every {{ .Code }} becomes the code", () => {
  assert.equal(renderSmsTemplate("Your code is {{ .Code }}", "123456"), "Your code is 123456");
  assert.equal(
    renderSmsTemplate("{{.Code}} is your code ({{ .Code }})", "0042"),
    "0042 is your code (0042)",
  );
  assert.equal(renderSmsTemplate("Code: {{ .Code }} $& $1", "9"), "Code: 9 $& $1");
});

Deno.test("a gateway answering something that is not its API (an HTML error page) is a failed send (upstream_failed)", async () => {
  const ac = new AbortController();
  const html = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    () => new Response("<html>Bad gateway</html>", { status: 503 }),
  );
  const fake = await startSmsFake("messagebird");
  try {
    const p = providerFor(fake, {
      AUTHSVC_SMS_MESSAGEBIRD_API_URL: `http://127.0.0.1:${html.addr.port}`,
    });
    const e = await sendError(p.send({ to: "15551234567", text: "Your code is 1234" }));
    assert.equal(statusOf(e), 422); // GoTrue's answer to any failed send
    assert.equal(e.situation, "upstream_failed");
    assert.match(e.message, /unexpected answer \(HTTP 503, not a JSON object\)/);
  } finally {
    await fake.close();
    ac.abort();
    await html.finished;
  }
});

/**
 * What an operator reads when a request fails underneath: the error's chain
 * of causes reaches the log line, while the client sees only the error body.
 */
import assert from "node:assert/strict";
import { describeError } from "../../server/observe/log.ts";
import { call } from "../helpers/http.ts";
import { withEmail } from "./email/_helpers.ts";

Deno.test("describeError: the error, then each cause underneath it", () => {
  const root = new TypeError("connection reset");
  const mid = new Error("could not send", { cause: root });
  assert.equal(
    describeError(new Error("request failed", { cause: mid })),
    "Error: request failed <- Error: could not send <- TypeError: connection reset",
  );
  assert.equal(describeError("plain"), "plain");
  assert.equal(describeError(new RangeError("alone")), "RangeError: alone");
  const loop = new Error("loop");
  (loop as { cause?: unknown }).cause = loop;
  assert.equal(describeError(loop).split(" <- ").length, 6, "a cycle stops after six");
});

Deno.test("SMTP down: the client gets email_send_failed, the log names the SMTP error", async () => {
  await withEmail({}, async ({ srv, smtp }) => {
    smtp.mode = "refuse";
    srv.logs.length = 0;
    const r = await call(srv, "POST", "/signup", {
      body: { email: "cause@example.com", password: "pw-123456" },
    });
    assert.equal(r.status, 500);
    assert.equal(r.body.error_code, "email_send_failed");
    assert.equal(r.body.msg, "Error sending confirmation email", "nothing underneath leaks");
    const lines = srv.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const failed = lines.find((l) => l.msg === "request failed");
    assert.ok(failed, `no "request failed" line in ${srv.logs.join("\n")}`);
    assert.equal(failed.level, "error");
    assert.equal(failed.error_code, "email_send_failed");
    assert.equal(failed.route, "/signup");
    const chain = String(failed.error).split(" <- ");
    assert.equal(chain[0], "AuthError: Error sending confirmation email");
    assert.ok(chain.length >= 2, `the SMTP error is logged as the cause: ${failed.error}`);
  });
});

/**
 * Attack through the operators' console behind a proxy (issue 38, item 8):
 * the console calls the server's own API on the operator's behalf, and
 * dropped the client-IP header the settings trust (and RATE_LIMIT_HEADER).
 * Every console sign-in then counted as the proxy's: a password guesser
 * spent the limit of every operator, and the audit log recorded the proxy's
 * address instead of the guesser's.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import { ConsoleBrowser, createOperator } from "./_console.ts";

/** One console sign-in attempt from a client the proxy describes with `headers`. */
async function consoleLogin(
  browser: ConsoleBrowser,
  email: string,
  password: string,
  headers: Record<string, string>,
): Promise<number> {
  const res = await browser.fetch("/console/api/login", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ email, password }),
  });
  await res.body?.cancel();
  return res.status;
}

for (
  const [what, env, guesser, operator] of [
    [
      "the trusted client-IP header",
      { AUTHSVC_SECURITY_SB_FORWARDED_FOR_ENABLED: "true" },
      { "authsvc-proxy-forwarded-for": "203.0.113.66" },
      { "authsvc-proxy-forwarded-for": "198.51.100.5" },
    ],
    [
      "RATE_LIMIT_HEADER",
      { AUTHSVC_RATE_LIMIT_HEADER: "X-Client-Key" },
      { "x-client-key": "guesser" },
      { "x-client-key": "operator" },
    ],
  ] as const
) {
  Deno.test(`a password guesser behind the proxy spends every operator's console sign-ins (${what})`, async () => {
    const srv = await startTestServer({
      AUTHSVC_CONSOLE_ENABLED: "true",
      AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: "3/1h",
      ...env,
    });
    try {
      const email = `op-${crypto.randomUUID().slice(0, 8)}@example.com`;
      await createOperator(srv, email, "operator-password-1");
      const attacker = new ConsoleBrowser(srv);
      await (await attacker.fetch("/console/", { csrf: false })).body?.cancel();
      const guesses: number[] = [];
      for (let i = 0; i < 4; i++) {
        guesses.push(await consoleLogin(attacker, email, `guess-${i}`, guesser));
      }
      assert.deepEqual(guesses, [400, 400, 400, 429], "the guesser meets the limit");

      // The operator, another client of the same proxy, still signs in.
      const op = new ConsoleBrowser(srv);
      await (await op.fetch("/console/", { csrf: false })).body?.cancel();
      assert.equal(await consoleLogin(op, email, "operator-password-1", operator), 200);

      if ("authsvc-proxy-forwarded-for" in operator) {
        // The audit log names the operator's address, not the proxy's.
        const res = await srv.fetch("/admin/audit?query=action:login", {
          headers: { authorization: `Bearer ${await srv.serviceRoleToken()}` },
        });
        const entries = await res.json() as { ip_address: string }[];
        assert.equal(res.status, 200);
        assert.deepEqual(entries.map((e) => e.ip_address), ["198.51.100.5"]);
      }
    } finally {
      await srv.close();
    }
  });
}

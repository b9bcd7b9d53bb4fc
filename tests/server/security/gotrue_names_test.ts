/**
 * Attacks on a deployment configured with GoTrue's setting names (issue 38,
 * item 7): a client forging the client-IP header a GoTrue proxy does not
 * strip, and the committed example file's values overriding what the
 * operator set in the environment.
 */
import assert from "node:assert/strict";
import { jose } from "../../../deps.ts";
import { openDb } from "../../../server/db/db.ts";
import { dropNamespace, freshNamespace, startTestServer } from "../../helpers/server.ts";
import { freePort } from "../../helpers/process.ts";
import { copyEnvExample, startInCheckout } from "./_checkout.ts";

async function verifyWithForgedIp(
  url: string,
  headers: Record<string, string>,
): Promise<number> {
  const res = await fetch(`${url}/verify`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ type: "email", email: "nobody@example.com", token: "000000" }),
  });
  await res.body?.cancel();
  return res.status;
}

Deno.test("a client rotates Authsvc-Proxy-Forwarded-For behind a GoTrue proxy to dodge the per-IP limit", async () => {
  // The proxy of a GoTrue deployment sets Sb-Forwarded-For to the real client's address and
  // passes every other header on: the client chooses Authsvc-Proxy-Forwarded-For freely.
  const srv = await startTestServer({
    GOTRUE_SECURITY_SB_FORWARDED_FOR_ENABLED: "true",
    AUTHSVC_RATE_LIMIT_VERIFY: "2/1h",
  });
  try {
    const statuses: number[] = [];
    for (let i = 1; i <= 3; i++) {
      statuses.push(
        await verifyWithForgedIp(srv.url, {
          "sb-forwarded-for": "198.51.100.7",
          "authsvc-proxy-forwarded-for": `203.0.113.${i}`,
        }),
      );
    }
    assert.deepEqual(statuses.map((s) => s === 429), [false, false, true], String(statuses));
    // Another real client (another Sb-Forwarded-For) has its own count.
    assert.notEqual(
      await verifyWithForgedIp(srv.url, { "sb-forwarded-for": "198.51.100.8" }),
      429,
    );
  } finally {
    await srv.close();
  }
});

Deno.test("under our name the server reads only Authsvc-Proxy-Forwarded-For, never Sb-Forwarded-For", async () => {
  const srv = await startTestServer({
    AUTHSVC_SECURITY_SB_FORWARDED_FOR_ENABLED: "true",
    AUTHSVC_RATE_LIMIT_VERIFY: "2/1h",
  });
  try {
    const statuses: number[] = [];
    for (let i = 1; i <= 3; i++) {
      statuses.push(
        await verifyWithForgedIp(srv.url, {
          "authsvc-proxy-forwarded-for": "198.51.100.9",
          "sb-forwarded-for": `203.0.113.${i}`,
        }),
      );
    }
    assert.deepEqual(statuses.map((s) => s === 429), [false, false, true], String(statuses));
  } finally {
    await srv.close();
  }
});

Deno.test("the example file's AUTHSVC_ values override GoTrue names from the environment (checkout without .env)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "authsvc-gotrue-env-" });
  await copyEnvExample(dir);
  const secret = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(48))));
  const port = freePort();
  // Only GoTrue's names, as a GoTrue deployment's environment has them.
  const env: Record<string, string> = {
    GOTRUE_JWT_SECRET: secret,
    GOTRUE_SITE_URL: "http://app.example.test",
    API_EXTERNAL_URL: "http://auth.example.test",
    GOTRUE_API_HOST: "127.0.0.1",
    PORT: String(port),
    GOTRUE_MAILER_AUTOCONFIRM: "true",
  };
  const pg = Deno.env.get("DATABASE_URL");
  const ns = freshNamespace();
  if (pg) {
    env.GOTRUE_DB_DATABASE_URL = pg;
    env.DB_NAMESPACE = ns;
  }
  const srv = await startInCheckout(dir, env);
  try {
    const settings = await (await fetch(`${srv.url}/settings`)).json();
    assert.equal(settings.mailer_autoconfirm, true, "GOTRUE_MAILER_AUTOCONFIRM wins");

    const signup = await fetch(`${srv.url}/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "gotrue-env@example.com", password: "a-good-password-1" }),
    });
    const body = await signup.json();
    assert.equal(signup.status, 200, JSON.stringify(body));
    assert.equal(typeof body.access_token, "string", "signed in at once: autoconfirm is on");
    assert.equal(jose.decodeJwt(body.access_token).iss, "http://auth.example.test");

    // Tokens are signed with GOTRUE_JWT_SECRET.
    const now = Math.floor(Date.now() / 1000);
    const admin = await new jose.SignJWT({ role: "service_role" })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(new TextEncoder().encode(secret));
    const users = await fetch(`${srv.url}/admin/users`, {
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(users.status, 200, await users.text());
  } finally {
    assert.equal(await srv.stop(), 0);
    if (pg) {
      const db = await openDb({ url: pg, dataDir: "", maxPoolSize: 1, prefix: `${ns}_` });
      await dropNamespace(db, `${ns}_`).catch(() => {});
      await db.close();
    }
    await Deno.remove(dir, { recursive: true });
  }
});

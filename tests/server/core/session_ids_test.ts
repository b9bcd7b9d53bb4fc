/**
 * Session ids are UUIDs of version 7 (migrations/0017_session_ids_v7.sql):
 * each carries its creation time in milliseconds in its first 48 bits, so
 * later sessions sort after earlier ones (their index entries stay together
 * at the right-hand edge of a large index), and they are still plain UUIDs to
 * clients: the access token's `session_id`, GET /user with that token, and
 * sign-out all work with them.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../../helpers/server.ts";
import * as jose from "jose";

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The creation time a version-7 UUID carries, in milliseconds since the epoch. */
function millisOf(id: string): number {
  return parseInt(id.replaceAll("-", "").slice(0, 12), 16);
}

Deno.test("session ids are time-ordered UUIDs (version 7) that clients use as before", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const email = `v7-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const json = { "content-type": "application/json" };
    const up = await srv.fetch("/signup", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ email, password: "secret-pw-1" }),
    });
    assert.equal(up.status, 200);
    const ids: string[] = [];
    const tokens: string[] = [];
    for (let i = 0; i < 4; i++) {
      const before = Date.now();
      const res = await srv.fetch("/token?grant_type=password", {
        method: "POST",
        headers: json,
        body: JSON.stringify({ email, password: "secret-pw-1" }),
      });
      const body = await res.json();
      const after = Date.now();
      assert.equal(res.status, 200, JSON.stringify(body));
      const sid = String(jose.decodeJwt(body.access_token).session_id);
      assert.match(sid, V7, `a version-7 UUID: ${sid}`);
      // The clock the database stamps it with is this machine's (the same host).
      assert.ok(
        millisOf(sid) >= before - 1000 && millisOf(sid) <= after + 1000,
        `its time ${millisOf(sid)} is the sign-in's (${before}-${after})`,
      );
      ids.push(sid);
      tokens.push(body.access_token);
      // Two sessions of the same millisecond are in random order; a few apart are not.
      await new Promise((r) => setTimeout(r, 3));
    }
    assert.deepEqual([...ids].sort(), ids, "later sessions sort after earlier ones");
    assert.equal(new Set(ids).size, ids.length);

    // As any session id: GET /user accepts the token, sign-out ends that session only.
    const auth = (t: string) => ({ authorization: `Bearer ${t}` });
    const me = await srv.fetch("/user", { headers: auth(tokens[0]) });
    assert.equal(me.status, 200, await me.text());
    const out = await srv.fetch("/logout?scope=local", {
      method: "POST",
      headers: auth(tokens[0]),
    });
    assert.equal(out.status, 204);
    const gone = await srv.fetch("/user", { headers: auth(tokens[0]) });
    assert.equal(gone.status, 403);
    assert.equal((await gone.json()).error_code, "session_not_found");
    const other = await srv.fetch("/user", { headers: auth(tokens[1]) });
    assert.equal(other.status, 200, await other.text());
  } finally {
    await srv.close();
  }
});

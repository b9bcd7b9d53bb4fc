/**
 * The `user` of a token set is, byte for byte, GET /user's answer for the same state: both are
 * built by the one serializer (auth/users.ts userToJson) from the rows the statement read.
 * These tests read the raw text of the answers, so a difference of key order, number form or
 * time stamp shows (tests/server/core/user_json_test.ts covers the user states).
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { bearer, type Json, uniqueEmail } from "../../helpers/http.ts";

/** The raw text of `"user":{...}` inside a token set's JSON (the object that ends the set). */
function userText(body: string): string {
  const at = body.indexOf('"user":');
  assert.ok(at > 0, `a user member in ${body.slice(0, 200)}`);
  // Walk the object, minding strings, to its closing brace.
  let depth = 0;
  let inString = false;
  for (let i = at + 7; i < body.length; i++) {
    const ch = body[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return body.slice(at + 7, i + 1);
    }
  }
  throw new Error("unterminated user object");
}

async function post(srv: TestServer, path: string, body: Json) {
  const res = await srv.fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

async function getUserText(srv: TestServer, accessToken: string): Promise<string> {
  const res = await srv.fetch("/user", { headers: bearer(accessToken) });
  assert.equal(res.status, 200);
  return await res.text();
}

const META = {
  name: "Zoë 日本語 🎉",
  quote: 'a "b" \\ c',
  n: [1, 2.5, -0.1, 1e21, 12345678901234567890],
  nested: { "10": "ten", "2": "two", deep: { x: null, y: true } },
};

Deno.test("password and refresh grants answer GET /user's bytes as their user", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const email = uniqueEmail("TokenSetDoc");
    const up = await post(srv, "/signup", { email, password: "secret-pw-1", data: META });
    assert.equal(up.status, 200, up.text);

    const signIn = await post(srv, "/token?grant_type=password", {
      email,
      password: "secret-pw-1",
    });
    assert.equal(signIn.status, 200, signIn.text);
    assert.equal(signIn.type, "application/json");
    const set = JSON.parse(signIn.text);
    assert.deepEqual(Object.keys(set), [
      "access_token",
      "token_type",
      "expires_in",
      "expires_at",
      "refresh_token",
      "user",
    ]);
    assert.deepEqual(set.user.user_metadata, META, "the metadata as sent");
    // The sign-in changed last_sign_in_at: its answer shows the new state, as GET /user does.
    assert.equal(userText(signIn.text), await getUserText(srv, set.access_token));

    const refreshed = await post(srv, "/token?grant_type=refresh_token", {
      refresh_token: set.refresh_token,
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    const rset = JSON.parse(refreshed.text);
    assert.notEqual(rset.refresh_token, set.refresh_token, "rotated");
    assert.equal(userText(refreshed.text), await getUserText(srv, rset.access_token));

    // A change of the user (an MFA factor, a metadata update) shows in the next refresh.
    const upd = await srv.fetch("/user", {
      method: "PUT",
      headers: { ...bearer(rset.access_token), "content-type": "application/json" },
      body: JSON.stringify({ data: { plan: "pro" } }),
    });
    assert.equal(upd.status, 200);
    const enroll = await srv.fetch("/factors", {
      method: "POST",
      headers: { ...bearer(rset.access_token), "content-type": "application/json" },
      body: JSON.stringify({ factor_type: "totp", friendly_name: 'My "phone"' }),
    });
    assert.equal(enroll.status, 200, await enroll.clone().text());
    const again = await post(srv, "/token?grant_type=refresh_token", {
      refresh_token: rset.refresh_token,
    });
    assert.equal(again.status, 200, again.text);
    const aset = JSON.parse(again.text);
    assert.equal(aset.user.user_metadata.plan, "pro");
    assert.equal(aset.user.factors?.length, 1, "the unverified factor is listed");
    assert.equal(userText(again.text), await getUserText(srv, aset.access_token));
  } finally {
    await srv.close();
  }
});

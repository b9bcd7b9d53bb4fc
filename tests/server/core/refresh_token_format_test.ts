/**
 * The refresh token's text: stamped with its time of issue, stored under its stamp and hash
 * (server/auth/refresh_token_format.ts), and the tokens issued before stamps still honoured,
 * including a child handed out by a server of before (a rolling upgrade). Attacks: a forged or
 * stripped stamp gets nothing and does not count as reuse of the real token.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { movableClock, refreshGrant, signUpSession } from "./_helpers.ts";
import { hmacBase64url, hmacKey, randomToken } from "../../../server/util/crypto.ts";

const STAMPED = /^([0-9a-f]{12})\.[A-Za-z0-9_-]{43}$/;
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

function claims(jwt: string): Record<string, unknown> {
  return JSON.parse(atob(jwt.split(".")[1].replaceAll("-", "+").replaceAll("_", "/")));
}

async function keysOf(srv: TestServer, sessionId: string) {
  return await srv.db.query<{ id: string; token_hash: string; revoked: boolean }>(
    `SELECT id::text, token_hash, revoked FROM ${srv.db.t("refresh_tokens")}
     WHERE session_id = $1 ORDER BY id`,
    [sessionId],
  );
}

/** A token of the format before stamps (43 characters of base64url), stored as it was. */
async function insertUnstampedToken(
  srv: TestServer,
  s: { user: Record<string, unknown>; access_token: string },
  extra: { parentId?: string; revoked?: boolean; token?: string } = {},
): Promise<{ token: string; id: string }> {
  const token = extra.token ?? randomToken(32);
  const [row] = await srv.db.query<{ id: string }>(
    `INSERT INTO ${srv.db.t("refresh_tokens")}
       (token_hash, user_id, session_id, parent_id, revoked, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, now(), now()) RETURNING id::text`,
    [
      sha256(token),
      s.user.id,
      claims(s.access_token).session_id,
      extra.parentId ?? null,
      extra.revoked ?? false,
    ],
  );
  return { token, id: row.id };
}

Deno.test("a refresh token carries its time of issue; only its stamp and hash are stored", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const before = Date.now();
    const s = await signUpSession(srv);
    const after = Date.now();
    const m = STAMPED.exec(s.refresh_token);
    assert.ok(m, `unexpected token format: ${s.refresh_token}`);
    const stamp = parseInt(m[1], 16);
    assert.ok(stamp >= before && stamp <= after, `stamp ${stamp} outside ${before}-${after}`);
    const sessionId = String(claims(s.access_token).session_id);
    const [row] = await keysOf(srv, sessionId);
    assert.equal(row.token_hash, m[1] + sha256(s.refresh_token));
    // The rotated child: stamped too, and nothing of either token's text is in the table.
    const r = await refreshGrant(srv, s.refresh_token);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const child = r.body.refresh_token as string;
    assert.match(child, STAMPED);
    const rows = await keysOf(srv, sessionId);
    assert.deepEqual(rows.map((x) => x.token_hash), [
      row.token_hash,
      child.slice(0, 12) + sha256(child),
    ]);
    for (const x of rows) {
      for (const t of [s.refresh_token, child]) {
        assert.ok(!x.token_hash.includes(t.slice(13)), "a token's secret is stored");
      }
    }
  } finally {
    await srv.close();
  }
});

Deno.test("the keys of a session's successive tokens sort in the order they were issued", async () => {
  // What keeps an exchange's index writes on recent pages: a new key sorts after the older
  // ones under the column's own collation (the one its unique index is built with).
  const clock = movableClock();
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" }, { clock });
  try {
    const s = await signUpSession(srv);
    let token = s.refresh_token;
    for (let i = 0; i < 6; i++) {
      clock.advance(1);
      const r = await refreshGrant(srv, token);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      token = r.body.refresh_token as string;
    }
    const sessionId = String(claims(s.access_token).session_id);
    const byId = (await keysOf(srv, sessionId)).map((x) => x.token_hash);
    const byKey = await srv.db.query<{ token_hash: string }>(
      `SELECT token_hash FROM ${srv.db.t("refresh_tokens")} WHERE session_id = $1
       ORDER BY token_hash`,
      [sessionId],
    );
    assert.equal(byId.length, 7);
    assert.deepEqual(byKey.map((x) => x.token_hash), byId);
  } finally {
    await srv.close();
  }
});

Deno.test("a token issued before stamps is still honoured, and its repeat gets the same child", async () => {
  const clock = movableClock();
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" }, { clock });
  try {
    const s = await signUpSession(srv);
    const old = await insertUnstampedToken(srv, s);
    const a = await refreshGrant(srv, old.token);
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const child = a.body.refresh_token as string;
    assert.match(child, STAMPED);
    // Exchanged again within the reuse interval: the very same child.
    const b = await refreshGrant(srv, old.token);
    assert.equal(b.status, 200, JSON.stringify(b.body));
    assert.equal(b.body.refresh_token, child);
    const c = await refreshGrant(srv, child);
    assert.equal(c.status, 200, JSON.stringify(c.body));
    // The unstamped token is now two generations back, and the live token came within the reuse
    // interval of its use: it leads to the live token (rebuilt through its stamped child).
    const within = await refreshGrant(srv, old.token);
    assert.equal(within.status, 200, JSON.stringify(within.body));
    assert.equal(within.body.refresh_token, c.body.refresh_token);
    // Once the live token rotates again later than the interval after the unstamped token's use,
    // that token's reuse revokes the family.
    clock.advance(11);
    const d = await refreshGrant(srv, c.body.refresh_token as string);
    assert.equal(d.status, 200, JSON.stringify(d.body));
    const late = await refreshGrant(srv, old.token);
    assert.equal(late.status, 400);
    assert.equal(late.body.error_code, "refresh_token_already_used");
    assert.equal((await refreshGrant(srv, d.body.refresh_token as string)).status, 400);
  } finally {
    await srv.close();
  }
});

Deno.test("a child handed out before stamps is handed out again unchanged", async () => {
  // A rolling upgrade: a server of before rotated the token (its child: the bare HMAC, stored
  // under its bare hash); the client's retry within the interval reaches a server of now.
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv);
    const parent = await insertUnstampedToken(srv, s, { revoked: true });
    const childText = hmacBase64url(
      hmacKey(`refresh-token-child:${srv.config.jwt.secret}`),
      parent.token,
    );
    await insertUnstampedToken(srv, s, { parentId: parent.id, token: childText });
    const again = await refreshGrant(srv, parent.token);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.refresh_token, childText);
    const next = await refreshGrant(srv, childText);
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.match(next.body.refresh_token as string, STAMPED);
  } finally {
    await srv.close();
  }
});

Deno.test("a forged or stripped stamp gets nothing and does not end the real token's family", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const s = await signUpSession(srv);
    const token = s.refresh_token;
    const [stamp, secret] = token.split(".");
    const next = (parseInt(stamp, 16) + 1).toString(16).padStart(12, "0");
    const forgeries = [
      `${next}.${secret}`, // another time
      secret, // the secret alone, as a token of before stamps
      `${stamp}.${randomToken(32)}`, // the right time, a guessed secret
      `${stamp}`, // the stamp alone
      `${stamp}.`, // the stamp and nothing
      `${stamp.toUpperCase()}.${secret}`, // the same digits in upper case
    ];
    for (const f of forgeries) {
      const r = await refreshGrant(srv, f);
      assert.equal(r.status, 400, f);
      assert.equal(r.body.error_code, "refresh_token_not_found", f);
    }
    // Nothing was revoked: the real token still rotates, once.
    const r = await refreshGrant(srv, token);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.refresh_token as string, STAMPED);
  } finally {
    await srv.close();
  }
});

Deno.test("with AUTHSVC_SECURITY_REFRESH_TOKEN_STAMPED off, tokens have the format of before", async () => {
  // The first step of an upgrade while servers of before still run: they look tokens up by
  // the bare hash, so the new servers must hand out only tokens those can find.
  const srv = await startTestServer({
    AUTHSVC_MAILER_AUTOCONFIRM: "true",
    AUTHSVC_SECURITY_REFRESH_TOKEN_STAMPED: "false",
  });
  try {
    const s = await signUpSession(srv);
    assert.match(s.refresh_token, /^[A-Za-z0-9_-]{43}$/);
    const sessionId = String(claims(s.access_token).session_id);
    assert.equal((await keysOf(srv, sessionId))[0].token_hash, sha256(s.refresh_token));
    const a = await refreshGrant(srv, s.refresh_token);
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const child = a.body.refresh_token as string;
    assert.match(child, /^[A-Za-z0-9_-]{43}$/);
    const rows = await keysOf(srv, sessionId);
    assert.equal(rows[1].token_hash, sha256(child));
    // A stamped token issued earlier (by a server with stamps on) still works here.
    const b = await refreshGrant(srv, s.refresh_token);
    assert.equal(b.body.refresh_token, child);
  } finally {
    await srv.close();
  }
});

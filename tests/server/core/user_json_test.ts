/**
 * The user's JSON has one definition, the server's serializer (server/auth/users.ts
 * userToJson, with identityToJson and auth/mfa.ts factorToJson); the database only stores
 * rows. Every answer that carries a user gives, byte for byte, that serializer's text for the
 * rows read one table at a time: GET /user (built from its one-statement read, and kept), the
 * token sets of a sign-in and of the refresh grant, and the admin API's user. Checked across
 * user states: e-mail, phone and anonymous users, identities and factors in every form,
 * metadata with Unicode, escapes, array-index keys and numbers of every kind, metadata that is
 * not an object, bans, timestamps to the microsecond and outside the years 1000-9999.
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { profileBody } from "../../../server/api/user_profile.ts";
import { type FactorRow, factorToJson } from "../../../server/auth/mfa.ts";
import { userToJson } from "../../../server/auth/users.ts";
import { bearer, type Json, uniqueEmail } from "../../helpers/http.ts";
import { signUpSession } from "./_helpers.ts";

/** The serializer's text for user `id`, its rows read one table at a time. */
async function reference(srv: TestServer, id: string): Promise<string> {
  const s = srv.services;
  const user = await s.users.findById(id);
  assert.ok(user, "the user exists");
  const factors = await s.mfa.listFactors(id);
  return JSON.stringify(userToJson(user, {
    identities: await s.users.listIdentities(id),
    factors: factors.length ? factors.map(factorToJson) : undefined,
  }));
}

async function getText(srv: TestServer, path: string, token: string): Promise<string> {
  const res = await srv.fetch(path, { headers: bearer(token) });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return text;
}

/**
 * Every answer that carries user `id` is the reference text: GET /user's own builder, the admin
 * API's user, and unless the user is banned (no tokens then) a sign-in's token set, GET /user
 * built and then kept, and the refresh grant's token set.
 */
async function same(srv: TestServer, id: string, what: string): Promise<void> {
  const ref = await reference(srv, id);
  const p = await srv.services.users.profile<FactorRow>(id, null);
  assert.ok(p);
  assert.equal(profileBody(p), ref, `${what}: GET /user's builder`);
  const admin = await srv.serviceRoleToken();
  assert.equal(await getText(srv, `/admin/users/${id}`, admin), ref, `${what}: admin`);
  const row = await srv.services.users.findById(id);
  if (row?.banned_until && row.banned_until > new Date()) return;
  // A sign-in writes last_sign_in_at: the reference is read again after it.
  const set = await srv.services.sessions.issue(row!, { method: "password" });
  const after = await reference(srv, id);
  assert.equal(JSON.stringify(set.user), after, `${what}: sign-in token set`);
  assert.equal(await getText(srv, "/user", set.access_token), after, `${what}: GET /user`);
  assert.equal(await getText(srv, "/user", set.access_token), after, `${what}: GET /user kept`);
  const refreshed = await srv.fetch("/token?grant_type=refresh_token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ refresh_token: set.refresh_token }),
  });
  const text = await refreshed.text();
  assert.equal(refreshed.status, 200, text);
  assert.equal(
    JSON.stringify(JSON.parse(text).user),
    await reference(srv, id),
    `${what}: refresh token set`,
  );
}

/** Metadata that exercises the JSON writer: strings, keys and numbers of every kind. */
const TRICKY = {
  "plain": "ada",
  "unicode": "Zoë 日本語 🎉 \u2028 \u007f",
  "escapes": 'quote " backslash \\ slash / \b\f\n\r\t \u0001 \u001f',
  "10": "ten",
  "2": "two",
  "0": "zero",
  "-1": "minus one",
  "01": "leading zero",
  "4294967294": "largest index",
  "4294967295": "not an index",
  "99999999999": "too long for an index",
  "1.5": "not an index",
  "__proto__": { "polluted": true },
  "": "empty key",
  "nested": { "b": [1, "x", null, true, false, {}, [], { "3": 3, "a": 1, "1": 1 }] },
  "null": null,
  "ints": [
    0,
    1,
    -1,
    9007199254740991,
    -9007199254740991,
    9007199254740993,
    123456789012345678901234,
  ],
  "floats": [
    0.1,
    1.5,
    -2.25,
    0.30000000000000004,
    1e21,
    1e20,
    1e-7,
    1e-6,
    123.456,
    5e-300,
    1.7e307,
  ],
  "decimals_as_text": "1.0",
};

/** Number texts as they come in a request body (PostgreSQL keeps their decimal digits). */
const NUMBER_TEXTS = [
  "1.0",
  "2.50",
  "-0",
  "0.0",
  "1E2",
  "12345678901234567890",
  "0.000001",
  "0.0000001",
  "123456789012345678901",
  "1234567890123456789012",
  "3.141592653589793238462643383279",
  "-1e-7",
  "4.35",
  "100e-2",
];

/** Doubles exactly halfway between two shorter decimals (found by CI in the old SQL builder). */
const HALFWAY = ["43970358967506336", "43970358967506340", "4.3970358967506336e16"];

Deno.test("every answer carrying a user is the serializer's text for its rows, across user states", async () => {
  const srv = await startTestServer({ AUTHSVC_MAILER_AUTOCONFIRM: "true" });
  try {
    const users = srv.db.t("users");
    const identities = srv.db.t("identities");
    const factors = srv.db.t("mfa_factors");
    const sql = (text: string, params: unknown[]) => srv.db.query(text, params);

    // An e-mail user through the API (identity, app metadata, last sign-in).
    const s = await signUpSession(srv, uniqueEmail("Doc"));
    const id = (s.user as Json).id as string;
    await same(srv, id, "signed-up e-mail user");

    // Plain metadata (the builder's text path): separators and quotes inside strings.
    for (
      const data of [
        { a: "x\\", b: "y, z: w", 'c"': '"1": 2', n: [1, -2, { k: null }], t: true, e: {} },
        { 'say "hi", ok': 'a\\"b', list: ["", " ", ", ", ": "], int: 123456789012345 },
        { unicode: "Zoë 日本語 🎉", ctl: "\u0000".slice(1) + "\u0007\n", "ключ": "значение" },
      ]
    ) {
      await sql(`UPDATE ${users} SET raw_user_meta_data = $2::jsonb WHERE id = $1`, [
        id,
        JSON.stringify(data),
      ]);
      await same(srv, id, `plain metadata ${JSON.stringify(data)}`);
    }

    // Metadata of every kind, through the API and in SQL.
    const put = await srv.fetch("/user", {
      method: "PUT",
      headers: { ...bearer(s.access_token), "content-type": "application/json" },
      body: JSON.stringify({ data: TRICKY }),
    });
    assert.equal(put.status, 200, await put.text());
    await same(srv, id, "tricky user metadata");
    await sql(
      `UPDATE ${users} SET raw_app_meta_data = raw_app_meta_data || $2::jsonb WHERE id = $1`,
      [
        id,
        `{"numbers":[${NUMBER_TEXTS.join(",")}],"k":{${
          NUMBER_TEXTS.map((n, i) => `"${i}":${n}`).join(",")
        }}}`,
      ],
    );
    await same(srv, id, "number texts in app metadata");

    // Random doubles, written as JavaScript writes them and as 17 significant digits.
    const buf = new Float64Array(1);
    const bits = new Uint32Array(buf.buffer);
    const doubles: string[] = [];
    while (doubles.length < 400) {
      bits[0] = (Math.random() * 2 ** 32) >>> 0;
      bits[1] = (Math.random() * 2 ** 32) >>> 0;
      const v = buf[0];
      if (!Number.isFinite(v)) continue;
      doubles.push(String(v), v.toPrecision(17));
    }
    for (let e = -330; e <= 310; e += 7) doubles.push(`1.2345e${e}`, `9e${e}`);
    await sql(
      `UPDATE ${users} SET raw_user_meta_data = $2::jsonb WHERE id = $1`,
      [id, `{"d":[${doubles.join(",")}]}`],
    );
    await same(srv, id, "random doubles");
    for (const d of HALFWAY) {
      await sql(
        `UPDATE ${users} SET raw_user_meta_data = $2::jsonb WHERE id = $1`,
        [id, `{"d":[${d},1.5]}`],
      );
      await same(srv, id, `halfway double ${d}`);
    }

    // Every timestamp column set, to the microsecond, before 1970 and at the range's ends.
    await sql(
      `UPDATE ${users} SET email_change = 'new@example.com', email_change_sent_at = '1969-12-31 23:59:59.999501+00',
         phone = '15550001234', phone_confirmed_at = '2001-02-03 04:05:06.000999+00',
         phone_change = '15550009999', phone_change_sent_at = '1000-01-01 00:00:00+00',
         recovery_sent_at = '9999-12-31 23:59:59.999999+00', invited_at = now(),
         confirmation_sent_at = now(), reauthentication_sent_at = '2026-01-01 12:00:00.1+00',
         banned_until = '2999-01-01 00:00:00+00', raw_user_meta_data = '{}'
       WHERE id = $1`,
      [id],
    );
    await same(srv, id, "every timestamp, banned");
    await sql(`UPDATE ${users} SET banned_until = NULL WHERE id = $1`, [id]);

    // Identities: several with the same created_at millisecond (then by id), no e-mail,
    // no last sign-in, numbers in their data.
    for (
      const [pid, ts] of [["gh-2", "2020-01-01 00:00:00.1234+00"], [
        "gh-1",
        "2020-01-01 00:00:00.1239+00",
      ], ["gh-3", "2019-01-01 00:00:00+00"]]
    ) {
      await sql(
        `INSERT INTO ${identities} (user_id, provider, provider_id, identity_data, email, created_at, updated_at)
         VALUES ($1, 'github', $2, $3::jsonb, NULL, $4, $4)`,
        [id, pid, JSON.stringify({ sub: pid, n: 1.5, "1": "x", name: "Ünïcode" }), ts],
      );
    }
    await same(srv, id, "identities in created_at order, ties by id");

    // Factors: verified TOTP, unverified phone without a number, a challenged one.
    await sql(
      `INSERT INTO ${factors} (user_id, factor_type, friendly_name, status, phone, last_challenged_at)
       VALUES ($1, 'totp', 'phone app "work"', 'verified', NULL, now()),
              ($1, 'phone', '', 'unverified', NULL, NULL),
              ($1, 'phone', 'mobile', 'verified', '15550002222', NULL)`,
      [id],
    );
    await same(srv, id, "factors");
    await sql(`DELETE FROM ${factors} WHERE user_id = $1 AND factor_type = 'phone'`, [id]);
    await same(srv, id, "a factor deleted");

    // In one transaction: the user row, then an identity.
    await srv.db.transaction(async (tx) => {
      await tx.query(`UPDATE ${users} SET raw_user_meta_data = '{"t":1}' WHERE id = $1`, [id]);
      await tx.query(`DELETE FROM ${identities} WHERE user_id = $1 AND provider_id = 'gh-3'`, [id]);
    });
    await same(srv, id, "user row then identity in one transaction");

    // Written under other session settings (time zone, date style, float digits).
    await srv.db.transaction(async (tx) => {
      await tx.query(`SET LOCAL TimeZone = 'Asia/Kolkata'`, []);
      await tx.query(`SET LOCAL DateStyle = 'German, DMY'`, []);
      await tx.query(`SET LOCAL extra_float_digits = -5`, []);
      await tx.query(
        `UPDATE ${users} SET raw_user_meta_data = '{"f":[0.1,123.456,1e-7]}',
           invited_at = '2026-03-01 23:59:59.9999+00' WHERE id = $1`,
        [id],
      );
    });
    await same(srv, id, "written under other session settings");

    // Metadata that is not an object: `{ ...[1, 2] }` is {"0":1,"1":2}.
    await sql(`UPDATE ${users} SET raw_user_meta_data = '[1, 2]' WHERE id = $1`, [id]);
    await same(srv, id, "array metadata");
    // A number beyond double range: JavaScript reads it as Infinity and writes null.
    await sql(`UPDATE ${users} SET raw_user_meta_data = '{"big": 1e400}' WHERE id = $1`, [id]);
    await same(srv, id, "a number beyond double range");
    // A timestamp outside the years 1000-9999.
    await sql(
      `UPDATE ${users} SET raw_user_meta_data = '{}', invited_at = '0999-06-01 00:00:00+00',
         banned_until = NULL WHERE id = $1`,
      [id],
    );
    await same(srv, id, "a timestamp before the year 1000");

    // A phone user, an anonymous user, a user with nothing set.
    const phone = await srv.services.users.createWithIdentities(
      { phone: "15550003333", phone_confirmed_at: new Date(), raw_user_meta_data: { a: "b" } },
      ["phone"],
    );
    await same(srv, phone.id, "phone user");
    const anon = await srv.services.users.create({ is_anonymous: true });
    await same(srv, anon.id, "anonymous user");
    const [bare] = await srv.db.query<{ id: string }>(
      `INSERT INTO ${users} DEFAULT VALUES RETURNING id`,
      [],
    );
    await same(srv, bare.id, "a row with defaults only");
  } finally {
    await srv.close();
  }
});

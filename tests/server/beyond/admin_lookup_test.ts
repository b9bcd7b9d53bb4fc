/**
 * Admin lookups at scale (issue 44 item 6): supabase/auth#1390 (GET /admin/users?filter= slow
 * or timing out on large projects) and supabase/auth#180 (finding a user by e-mail, phone or id
 * through the admin API).
 *
 * `filter` keeps GoTrue's meaning (a part of the e-mail or of user_metadata.full_name) and also
 * finds a part of the phone number and the start of an id, on both the GoTrue-style pages and
 * the console's keyset pages, which the console's user search calls. Each kind of lookup is
 * answered through an index (pg_trgm GIN, or the primary key for an id prefix), never a
 * sequential scan of the users: the plans of the very statements the store runs, for their
 * parameters and as generic plans of prepared statements, are read on a table of 20,000 users. `deno task bench --scale` measures p99 at 10^6 users (bench/scale.ts).
 */
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { call, type Json, uniqueEmail } from "../../helpers/http.ts";
import type { Db, Queryable } from "../../../server/db/db.ts";
import { UserStore } from "../../../server/store/users.ts";
import { UserPageStore } from "../../../server/store/user_pages.ts";
import { Client, consoleSignIn, createUser } from "../console/_helpers.ts";

async function adminUser(srv: TestServer, body: Json): Promise<Json> {
  const r = await call(srv, "POST", "/admin/users", {
    token: await srv.serviceRoleToken(),
    body: { email_confirm: true, phone_confirm: true, ...body },
  });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** The ids GET /admin/users?filter= answers, on GoTrue's pages and on keyset pages. */
async function found(
  srv: TestServer,
  filter: string,
): Promise<{ paged: string[]; keyset: string[] }> {
  const token = await srv.serviceRoleToken();
  const q = encodeURIComponent(filter);
  const paged = await call(srv, "GET", `/admin/users?filter=${q}&per_page=100`, { token });
  assert.equal(paged.status, 200, paged.text);
  const keyset = await call(srv, "GET", `/admin/users?filter=${q}&per_page=100&after=`, { token });
  assert.equal(keyset.status, 200, keyset.text);
  const ids = (r: typeof paged) => (r.body.users as Json[]).map((u) => u.id as string).sort();
  assert.equal(Number(paged.headers.get("x-total-count")), ids(paged).length);
  return { paged: ids(paged), keyset: ids(keyset) };
}

Deno.test("auth#180: filter finds users by a part of the e-mail or name, the phone, an id prefix", async () => {
  const srv = await startTestServer({ AUTHSVC_CONSOLE_ENABLED: "true" });
  try {
    const tag = crypto.randomUUID().slice(0, 6);
    const ada = await adminUser(srv, {
      email: `ada.${tag}@lovelace.example`,
      phone: "+15550100123",
      user_metadata: { full_name: `Ada ${tag} Lovelace` },
    });
    const bob = await adminUser(srv, {
      email: `bob_${tag}@babbage.example`,
      phone: "+15550100456",
    });
    const both = [ada.id as string, bob.id as string].sort();
    const only = (u: Json) => ({ paged: [u.id as string], keyset: [u.id as string] });

    // GoTrue's: a part of the e-mail (case does not matter), a part of the full name.
    assert.deepEqual(await found(srv, `ADA.${tag}`), only(ada));
    assert.deepEqual(await found(srv, `${tag} lovelace`), only(ada));
    assert.deepEqual(await found(srv, tag), { paged: both, keyset: both });
    // LIKE's wildcards are plain characters: "_" is not "any character".
    assert.deepEqual(await found(srv, `bob_${tag}`), only(bob));
    assert.deepEqual(await found(srv, `ada_${tag}`), { paged: [], keyset: [] });
    // The phone, as people type it.
    assert.deepEqual(await found(srv, "+1 (555) 010-0456"), only(bob));
    assert.deepEqual(await found(srv, "0100123"), only(ada));
    // The start of an id, with or without its dashes.
    const id = ada.id as string;
    const prefix = await found(srv, id.slice(0, 13));
    assert.ok(prefix.paged.includes(id) && !prefix.paged.includes(bob.id as string));
    assert.deepEqual(prefix.keyset, prefix.paged);
    // A dash where a UUID has none is not an id prefix (nor anything else here).
    assert.deepEqual(await found(srv, `${id.slice(0, 4)}-${id.slice(4, 8)}`), {
      paged: [],
      keyset: [],
    });

    // The console's user search asks the same filter through its keyset pages.
    const opEmail = uniqueEmail("lookup-op");
    await createUser(srv, opEmail, "operator-password-1", "supabase_admin");
    const op = new Client(srv);
    assert.equal((await consoleSignIn(op, opEmail, "operator-password-1")).status, 200);
    const qs = new URLSearchParams({ per_page: "50", after: "", filter: "+1 555 010 0123" });
    const page = await op.json(`/console/api/gotrue/admin/users?${qs}`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.deepEqual((page.body.users as Json[]).map((u) => u.email), [ada.email]);
  } finally {
    await srv.close();
  }
});

/** `v` as an SQL literal (EXECUTE's arguments). */
function literal(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  return `'${(v instanceof Date ? v.toISOString() : String(v)).replaceAll("'", "''")}'`;
}

/**
 * A Queryable that answers nothing but keeps the plans of each statement it is given: the plan
 * for its parameters, and the generic plan a prepared statement may switch to (the server's
 * statements are prepared), which cannot know how rare the pattern is.
 */
function planRecorder(db: Db, plans: string[]): Queryable {
  const text = (rows: Json[]) => rows.map((r) => Object.values(r)[0]).join("\n");
  return {
    async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
      plans.push(text(await db.query<Json>(`EXPLAIN ${sql}`, params)));
      await db.transaction(async (tx) => {
        await tx.exec("SET LOCAL plan_cache_mode = force_generic_plan");
        await tx.exec(`PREPARE lookup_plan AS ${sql}`);
        const args = params.map(literal).join(", ");
        plans.push(text(await tx.query<Json>(`EXPLAIN EXECUTE lookup_plan(${args})`)));
        await tx.exec("DEALLOCATE lookup_plan");
      });
      return [{ n: 0 }] as T[];
    },
    exec: (sql) => db.exec(sql),
  };
}

Deno.test("auth#1390: every kind of filter is answered through an index, not a scan of the users", async () => {
  const srv = await startTestServer({});
  try {
    const users = srv.db.t("users");
    await srv.db.exec(
      `INSERT INTO ${users} (email, phone, raw_user_meta_data, created_at)
       SELECT 'scan-' || g || '@lookup.example', (15550000000 + g)::text,
              jsonb_build_object('full_name', 'Person ' || g),
              now() - g * interval '1 second'
       FROM generate_series(1, 20000) g`,
    );
    // What autovacuum does on a live server: GIN's pending entries merged, statistics read.
    await srv.db.query(`VACUUM ANALYZE ${users}`);
    const [{ id }] = await srv.db.query<{ id: string }>(
      `SELECT id FROM ${users} WHERE email = 'scan-12345@lookup.example'`,
    );
    // Each kind of filter, and the index that must answer it.
    const kinds: [string, string, RegExp][] = [
      ["a part of an e-mail", "scan-12345@", /Bitmap Index Scan on \S+_users_search_trgm/],
      ["a part of a full name", "Person 12345", /Bitmap Index Scan on \S+_users_search_trgm/],
      ["a phone number", "+1 555 001 2345", /Bitmap Index Scan on \S+_users_phone_trgm/],
      ["an id prefix", id.slice(0, 8), /Bitmap Index Scan on \S+_users_pkey/],
    ];
    const filters = Object.fromEntries(kinds.map(([what, filter]) => [what, filter]));
    for (const [what, filter, index] of kinds) {
      const plans: string[] = [];
      const rec = planRecorder(srv.db, plans);
      await new UserStore(srv.db).list({ filter, ascending: false, limit: 50, offset: 0 }, rec);
      await new UserPageStore(srv.db).page(filter, null, 51, rec);
      assert.equal(plans.length, 4, what);
      for (const plan of plans) {
        assert.doesNotMatch(plan, /Seq Scan/, `${what} (${filter}):\n${plan}`);
        assert.match(plan, index, `${what}:\n${plan}`);
      }
    }
    // And the answers are the user looked for.
    const token = await srv.serviceRoleToken();
    for (const filter of Object.values(filters)) {
      const r = await call(srv, "GET", `/admin/users?filter=${encodeURIComponent(filter)}`, {
        token,
      });
      assert.ok(
        (r.body.users as Json[]).some((u) => u.id === id),
        `${filter}: ${r.text.slice(0, 200)}`,
      );
    }
  } finally {
    await srv.close();
  }
});

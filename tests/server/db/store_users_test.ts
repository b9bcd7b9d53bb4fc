/**
 * The users side of server/store/ against a migrated database: what the
 * domain relies on each statement to do (filters taken literally, pages in
 * order, deleted users out of sight, counters per window).
 */
import assert from "node:assert/strict";
import { IdentityStore } from "../../../server/store/identities.ts";
import { ProfileStore } from "../../../server/store/profile.ts";
import { RateLimitStore } from "../../../server/store/rate_limits.ts";
import { UserStore } from "../../../server/store/users.ts";
import { startTestServer } from "../../helpers/server.ts";

function tag(): string {
  return crypto.randomUUID().slice(0, 8);
}

Deno.test("UserStore.list: the filter is a literal substring, pages in creation order", async () => {
  const srv = await startTestServer({});
  try {
    const users = new UserStore(srv.db);
    const t = tag();
    const make = (local: string) =>
      users.create({ aud: "authenticated", role: "authenticated", email: `${local}@${t}.example` });
    const a = await make("a_1");
    const b = await make("a%2");
    const c = await make("ax3");
    // Creation times a day apart, so the order does not rest on the clock's resolution.
    for (const [u, day] of [[a, 1], [b, 2], [c, 3]] as const) {
      await srv.db.query(`UPDATE ${srv.db.t("users")} SET created_at = $2 WHERE id = $1`, [
        u.id,
        new Date(Date.UTC(2020, 0, day)),
      ]);
    }
    await users.markDeleted(c.id, new Date());
    const all = await users.list({ filter: t, ascending: true, limit: 10, offset: 0 });
    assert.equal(all.total, 2, "the deleted user is not counted");
    assert.deepEqual(all.users.map((u) => u.id), [a.id, b.id]);
    const newest = await users.list({ filter: t, ascending: false, limit: 1, offset: 0 });
    assert.equal(newest.total, 2, "the total counts every page");
    assert.deepEqual(newest.users.map((u) => u.id), [b.id]);
    // "_" and "%" match themselves only: "a_" is not "any character after a".
    const underscore = await users.list({ filter: "a_", ascending: true, limit: 10, offset: 0 });
    assert.deepEqual(underscore.users.map((u) => u.id), [a.id]);
    const percent = await users.list({ filter: "a%", ascending: true, limit: 10, offset: 0 });
    assert.deepEqual(percent.users.map((u) => u.id), [b.id]);
    assert.equal(await users.findById(c.id), null, "a deleted user is not found");
  } finally {
    await srv.close();
  }
});

Deno.test("IdentityStore: identities grouped by user, owners found through an identity's e-mail", async () => {
  const srv = await startTestServer({});
  try {
    const users = new UserStore(srv.db);
    const identities = new IdentityStore(srv.db);
    const t = tag();
    const u1 = await users.create({ aud: "a", role: "r", email: `one@${t}.example` });
    const u2 = await users.create({ aud: "a", role: "r", email: `two@${t}.example` });
    const add = (user_id: string, provider: string, email: string | null) =>
      identities.create({
        user_id,
        provider,
        provider_id: crypto.randomUUID(),
        identity_data: {},
        email,
      });
    const i1 = await add(u1.id, "email", `one@${t}.example`);
    const i2 = await add(u1.id, "github", `gh@${t}.example`);
    const i3 = await add(u2.id, "email", `two@${t}.example`);
    for (const [i, day] of [[i1, 1], [i2, 2]] as const) {
      await srv.db.query(`UPDATE ${srv.db.t("identities")} SET created_at = $2 WHERE id = $1`, [
        i.id,
        new Date(Date.UTC(2020, 0, day)),
      ]);
    }
    assert.deepEqual((await identities.listByUsers([])).size, 0);
    const byUser = await identities.listByUsers([u1.id, u2.id]);
    assert.deepEqual(byUser.get(u1.id)?.map((i) => i.id), [i1.id, i2.id]);
    assert.deepEqual(byUser.get(u2.id)?.map((i) => i.id), [i3.id]);
    assert.deepEqual(await users.ownersOfEmails([`gh@${t}.example`]), [u1.id]);
    await identities.deleteAllExcept(u1.id, ["email"]);
    assert.deepEqual((await identities.listByUser(u1.id)).map((i) => i.provider), ["email"]);
    assert.equal(await identities.findByProviderId("github", i2.provider_id), undefined);
  } finally {
    await srv.close();
  }
});

Deno.test("ProfileStore: no revision for an unknown user, a new one after each write", async () => {
  const srv = await startTestServer({});
  try {
    const users = new UserStore(srv.db);
    const profiles = new ProfileStore(srv.db);
    assert.equal(await profiles.revision(crypto.randomUUID(), null), null);
    const u = await users.create({ aud: "a", role: "r", email: `p@${tag()}.example` });
    const before = await profiles.revision(u.id, crypto.randomUUID());
    assert.equal(before?.session, false, "a session that does not exist");
    await users.update(u.id, { raw_user_meta_data: { x: 1 } });
    const after = await profiles.read(u.id, null);
    assert.ok(after && before && after.rev !== before.rev);
    assert.deepEqual(after?.user.raw_user_meta_data, { x: 1 });
    assert.deepEqual(after?.identities, []);
  } finally {
    await srv.close();
  }
});

Deno.test("RateLimitStore: counts per key and window; pruned windows start again", async () => {
  const srv = await startTestServer({});
  try {
    const counters = new RateLimitStore(srv.db);
    const key = `k:${tag()}`;
    const w1 = new Date("2026-01-01T00:00:00Z");
    const w2 = new Date("2026-01-01T00:05:00Z");
    assert.equal(await counters.increment(key, w1), 1);
    assert.equal(await counters.increment(key, w1), 2);
    assert.equal(await counters.increment(`${key}x`, w1), 1, "another key counts apart");
    assert.equal(await counters.increment(key, w2), 1, "a new window starts at 1");
    await counters.pruneBefore(w2);
    assert.equal(await counters.increment(key, w1), 1, "the pruned window is gone");
    assert.equal(await counters.increment(key, w2), 2, "the later window stays");
  } finally {
    await srv.close();
  }
});

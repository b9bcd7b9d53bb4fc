/**
 * An embedded database written by an earlier release (PGlite 0.3, PostgreSQL 17) after the move to
 * PGlite 0.5 (PostgreSQL 18): the server refuses it with the command to run, and
 * `deno task pglite:upgrade` (scripts/pglite_upgrade.ts) copies it over, after which the server
 * signs its users in as before. The old directory is made by the old PGlite itself, with every
 * migration applied, as a server of that release left it.
 */
import assert from "node:assert/strict";
import { bcrypt } from "hash-wasm";
import { createApp } from "../../../server/app.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { type Db, openDb, type Queryable } from "../../../server/db/db.ts";
import { migrate } from "../../../server/db/migrate.ts";
import { PGLITE_PG_MAJOR } from "../../../server/db/pglite.ts";
import { PGlite17 } from "../../../scripts/pglite_upgrade.ts";
import { Logger } from "../../../server/observe/log.ts";
import { BASE_ENV } from "../../helpers/server.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const USER_ID = "6f1c0a52-3b9e-4c57-9d42-0c2f1e7a9b13";
const SECRET = "a-generated-secret-of-an-earlier-release-0123456789abcdef";

type Pg17 = InstanceType<typeof PGlite17>;
type Pg17Tx = Parameters<Parameters<Pg17["transaction"]>[0]>[0];

function queryable(pg: Pg17 | Pg17Tx): Queryable {
  return {
    query: async <T>(text: string, params: unknown[] = []) =>
      (await pg.query(text, params)).rows as T[],
    exec: async (text: string) => void await pg.exec(text),
  };
}

/** A data directory as a server of the earlier release left it: migrated, one user, jwt_secret. */
async function earlierReleaseDataDir(dir: string): Promise<void> {
  const pg = new PGlite17(dir);
  await pg.waitReady;
  const db: Db = {
    kind: "pglite",
    prefix: "",
    t: (name) => name,
    ...queryable(pg),
    transaction: (fn) => pg.transaction((tx) => fn(queryable(tx))),
    withConnection: (fn) => fn(queryable(pg)),
    ping: () => Promise.resolve(true),
    close: () => pg.close(),
  };
  await migrate(db);
  const hash = await bcrypt({
    password: "correct-horse",
    salt: crypto.getRandomValues(new Uint8Array(16)),
    costFactor: 4,
    outputType: "encoded",
  });
  await db.query(
    `INSERT INTO users (id, email, encrypted_password, email_confirmed_at, raw_user_meta_data)
     VALUES ($1, 'ann@example.com', $2, now(), '{"name":"Ann"}')`,
    [USER_ID, hash],
  );
  await db.query(
    `INSERT INTO identities (user_id, provider, provider_id, identity_data, email)
     VALUES ($1, 'email', $2, jsonb_build_object('sub', $2::text, 'email', 'ann@example.com'),
             'ann@example.com')`,
    [USER_ID, USER_ID],
  );
  await db.close();
  await Deno.writeTextFile(`${dir}/jwt_secret`, SECRET);
}

async function upgradeTask(dir: string): Promise<{ code: number; out: string }> {
  const res = await new Deno.Command(Deno.execPath(), {
    args: ["task", "pglite:upgrade", dir],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(res.stdout) + new TextDecoder().decode(res.stderr);
  return { code: res.code, out };
}

Deno.test("PGLITE_PG_MAJOR is the PostgreSQL major of the pinned PGlite", async () => {
  const db = await openDb({ url: "", dataDir: "memory://", maxPoolSize: 0, prefix: "" });
  try {
    const [{ v }] = await db.query<{ v: string }>("SELECT current_setting('server_version_num') v");
    assert.equal(String(Math.floor(Number(v) / 10000)), PGLITE_PG_MAJOR);
  } finally {
    await db.close();
  }
});

Deno.test("an earlier release's embedded database: refused with the command, then upgraded", async (t) => {
  const tmp = await Deno.makeTempDir({ prefix: "authsvc-pglite-upgrade-" });
  const dir = `${tmp}/data`;
  try {
    await earlierReleaseDataDir(dir);
    assert.equal((await Deno.readTextFile(`${dir}/PG_VERSION`)).trim(), "17");

    await t.step("the server refuses it, naming the directory and the command", async () => {
      const err = await openDb({ url: "", dataDir: dir, maxPoolSize: 0, prefix: "" }).then(
        () => null,
        (e: Error) => e,
      );
      assert.ok(err, "a PostgreSQL 17 directory must not open");
      assert.match(err.message, new RegExp(`${dir} holds a PostgreSQL 17 database`));
      assert.equal(err.name, "DataDirError", "a start failure of one line (server/main.ts)");
      assert.match(err.message, new RegExp(`deno task pglite:upgrade ${dir}`));
      assert.equal((await Deno.readTextFile(`${dir}/PG_VERSION`)).trim(), "17", "left as it was");
    });

    await t.step("pglite:upgrade copies it and keeps the old one beside it", async () => {
      const { code, out } = await upgradeTask(dir);
      assert.equal(code, 0, out);
      assert.match(out, new RegExp(`upgraded "${dir}" to PostgreSQL ${PGLITE_PG_MAJOR}`));
      assert.equal((await Deno.readTextFile(`${dir}/PG_VERSION`)).trim(), PGLITE_PG_MAJOR);
      assert.equal((await Deno.readTextFile(`${dir}.pg17/PG_VERSION`)).trim(), "17");
      assert.equal(await Deno.readTextFile(`${dir}/jwt_secret`), SECRET);
    });

    await t.step("the server opens the copy and signs the user in", async () => {
      const db = await openDb({ url: "", dataDir: dir, maxPoolSize: 0, prefix: "" });
      const { config } = readConfig({ ...BASE_ENV, DATABASE_URL: "" });
      const app = await createApp(config, { db, log: new Logger("error", () => {}) });
      try {
        const res = await app.fetch(
          new Request("http://localhost/token?grant_type=password", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email: "ann@example.com", password: "correct-horse" }),
          }),
          "127.0.0.1",
        );
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.equal(body.user.id, USER_ID);
        assert.equal(body.user.user_metadata.name, "Ann");
        assert.equal(body.user.identities[0].provider, "email");
      } finally {
        await app.close();
        await db.close();
      }
    });

    await t.step("a second run has nothing to do", async () => {
      const { code, out } = await upgradeTask(dir);
      assert.equal(code, 0, out);
      assert.match(
        out,
        new RegExp(`already a PostgreSQL ${PGLITE_PG_MAJOR} database: nothing to do`),
      );
    });

    await t.step("a directory that is no database is refused", async () => {
      const { code, out } = await upgradeTask(tmp);
      assert.equal(code, 1, out);
      assert.match(out, /is not an embedded database: it has no PG_VERSION file/);
    });
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

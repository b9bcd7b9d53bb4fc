/**
 * Transaction poolers (PgBouncer, Supavisor): with unnamed statements
 * (`prepared_statements=unnamed` in DATABASE_URL, or
 * AUTHSVC_DB_PREPARED_STATEMENTS=unnamed) no prepared statement outlives its
 * transaction, and queries, errors and transactions behave as with named
 * ones. The whole server suite also runs through PgBouncer in transaction
 * mode in CI (.ci/run).
 */
import assert from "node:assert/strict";
import { Pool } from "../../../server/db/pg/pool.ts";
import { parseConnectionString } from "../../../server/db/pg/options.ts";
import { PgError } from "../../../server/db/pg/errors.ts";
import { readConfig } from "../../../server/config/mod.ts";
import { BASE_ENV, startTestServer } from "../../helpers/server.ts";
import { call, uniqueEmail } from "../../helpers/http.ts";

const PG_URL = Deno.env.get("DATABASE_URL") ?? "";
const onPg = { ignore: !PG_URL };

/** PG_URL with its prepared_statements parameter set to `mode`. */
function withMode(mode: "named" | "unnamed"): string {
  const u = new URL(PG_URL.replace(/^postgres(ql)?:/, "http:"));
  u.searchParams.set("prepared_statements", mode);
  return u.toString().replace(/^http:/, "postgres:");
}

Deno.test("poolers: prepared_statements and statement_timeout in DATABASE_URL, and the settings", () => {
  const env = () => undefined;
  assert.equal(parseConnectionString("postgres://h/db", env).unnamedStatements, undefined);
  assert.equal(
    parseConnectionString("postgres://h/db?prepared_statements=unnamed", env).unnamedStatements,
    true,
  );
  assert.equal(
    parseConnectionString("postgres://h/db?prepared_statements=named", env).unnamedStatements,
    false,
  );
  assert.throws(
    () => parseConnectionString("postgres://h/db?prepared_statements=off", env),
    /prepared_statements must be named or unnamed/,
  );
  assert.equal(
    parseConnectionString("postgres://h/db?statement_timeout=2s", env).params.statement_timeout,
    "2s",
  );
  assert.throws(
    () => parseConnectionString("postgres://h/db?statement_timeout=soon", env),
    /statement_timeout must be milliseconds or a duration/,
  );
  const { config } = readConfig({
    ...BASE_ENV,
    AUTHSVC_DB_PREPARED_STATEMENTS: "unnamed",
    AUTHSVC_DB_STATEMENT_TIMEOUT: "1500ms",
    AUTHSVC_API_MAX_REQUEST_DURATION: "0",
  });
  assert.equal(config.db.unnamedStatements, true);
  assert.equal(config.db.statementTimeoutMs, 1500);
  assert.equal(config.api.maxRequestDurationMs, 0);
  assert.throws(
    () => readConfig({ ...BASE_ENV, AUTHSVC_DB_PREPARED_STATEMENTS: "sometimes" }),
    /AUTHSVC_DB_PREPARED_STATEMENTS: expected one of named, unnamed, got "sometimes"/,
  );
});

Deno.test({
  name: "poolers: unnamed statements leave nothing prepared and answer like named ones",
  ...onPg,
  fn: async () => {
    const p = new Pool(parseConnectionString(withMode("unnamed")), { max: 2 });
    try {
      // A marker of this test's own: behind a pooler, other clients' statements may be listed.
      const marker = `poolers_${crypto.randomUUID().slice(0, 8)}`;
      const text =
        `SELECT $1::int + 1 AS x, $2::timestamptz AS t, $3::jsonb AS j, $4 AS s /* ${marker} */`;
      const when = new Date("2026-11-25T10:00:00.123Z");
      // pipelined, with a failing statement amid them: each gets its own answer
      const runs = await Promise.allSettled([
        ...Array.from({ length: 20 }, (_, i) => p.query(text, [i, when, { i }, `s${i}`])),
        p.query(`SELECT 1 / $1::int AS boom`, [0]),
      ]);
      runs.slice(0, 20).forEach((r, i) => {
        assert.equal(r.status, "fulfilled");
        assert.deepEqual((r as PromiseFulfilledResult<unknown[]>).value, [{
          x: i + 1,
          t: when,
          j: { i },
          s: `s${i}`,
        }]);
      });
      const boom = (runs[20] as PromiseRejectedResult).reason;
      assert.ok(boom instanceof PgError && boom.code === "22012");
      const [{ n }] = await p.query(
        `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE $1`,
        [`%${marker}%`],
      );
      assert.equal(n, 0);
      // a transaction on a reserved connection
      const c = await p.reserve();
      try {
        await c.simple("BEGIN");
        const [{ v }] = await c.query(`SELECT $1::text AS v`, ["in tx"]);
        assert.equal(v, "in tx");
        await c.simple("COMMIT");
        assert.equal(c.txStatus, "I");
      } finally {
        p.release(c);
      }
    } finally {
      await p.end();
    }
  },
});

Deno.test({
  name: "poolers: AUTHSVC_DB_PREPARED_STATEMENTS=unnamed serves sign-up and sign-in unprepared",
  ...onPg,
  fn: async () => {
    const srv = await startTestServer({
      DATABASE_URL: PG_URL,
      AUTHSVC_DB_PREPARED_STATEMENTS: "unnamed",
      AUTHSVC_MAILER_AUTOCONFIRM: "true",
    }, { backend: "postgres" });
    try {
      const address = uniqueEmail("pooler");
      const up = await call(srv, "POST", "/signup", {
        body: { email: address, password: "pw-123456" },
      });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const inn = await call(srv, "POST", "/token?grant_type=password", {
        body: {
          email: address,
          password: "pw-123456",
        },
      });
      assert.equal(inn.status, 200, JSON.stringify(inn.body));
      // Named statements would be listed in the session that ran them; a shared connection of
      // the server's pool answers this, after having run the sign-in's statements.
      const rows = await srv.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE $1`,
        [`%${srv.db.prefix}%`],
      );
      assert.equal(rows[0].n, 0);
    } finally {
      await srv.close();
    }
  },
});

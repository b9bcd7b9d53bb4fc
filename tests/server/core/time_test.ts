/** Real timestamptz values read back from PostgreSQL through the server's client. */
import assert from "node:assert/strict";
import { Pool } from "../../../server/db/pg/pool.ts";
import { parseConnectionString } from "../../../server/db/pg/options.ts";

const PG_URL = Deno.env.get("DATABASE_URL") ?? "";

Deno.test({
  name: "timestamptz values come back from PostgreSQL to the millisecond",
  ignore: !PG_URL,
  fn: async () => {
    const pool = new Pool(parseConnectionString(PG_URL), { max: 1 });
    try {
      const rows = await pool.query(
        `SELECT $1::timestamptz AS a, '2026-11-25 03:00:28.786923+00'::timestamptz AS b,
          '2026-11-25 03:00:28+00'::timestamptz AS c, 'infinity'::timestamptz AS d`,
        [new Date(Date.UTC(2031, 4, 6, 7, 8, 9, 10))],
      );
      assert.equal((rows[0].a as Date).toISOString(), "2031-05-06T07:08:09.010Z");
      assert.equal((rows[0].b as Date).toISOString(), "2026-11-25T03:00:28.786Z");
      assert.equal((rows[0].c as Date).toISOString(), "2026-11-25T03:00:28.000Z");
      assert.equal((rows[0].d as Date).getTime(), NaN);
    } finally {
      await pool.end();
    }
  },
});

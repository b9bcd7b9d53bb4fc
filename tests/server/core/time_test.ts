/**
 * server/util/time.ts against the built-ins it stands in for: the same
 * strings out of Dates and the same Dates out of PostgreSQL's text, over
 * random instants and the edges (no fraction, one to six fraction digits,
 * years before 1000 and after 9999, BC, infinity, other offsets); and real
 * timestamptz values read back from PostgreSQL.
 */
import assert from "node:assert/strict";
import { isoString, parseTimestamptz } from "../../../server/util/time.ts";
import { Pool } from "../../../server/db/pg/pool.ts";
import { parseConnectionString } from "../../../server/db/pg/options.ts";

const PG_URL = Deno.env.get("DATABASE_URL") ?? "";

/** A timestamptz as PostgreSQL writes it in UTC with `digits` fraction digits (zeros trimmed). */
function pgText(d: Date, micros: number): string {
  const iso = d.toISOString(); // 2026-11-25T03:00:28.786Z
  const frac = (String(d.getUTCMilliseconds()).padStart(3, "0") + String(micros).padStart(3, "0"))
    .replace(/0+$/, "");
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac ? "." + frac : ""}+00`;
}

Deno.test("isoString writes what toISOString writes", () => {
  const edges = [
    0,
    Date.UTC(1000, 0, 1),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    Date.UTC(999, 11, 31, 23, 59, 59, 999),
    Date.UTC(10000, 0, 1),
    Date.UTC(-5, 0, 1),
    Date.UTC(2026, 1, 28, 9, 5, 7, 4),
    Date.UTC(2024, 1, 29, 0, 0, 0, 50),
  ];
  for (let i = 0; i < 20_000; i++) edges.push(Math.floor((Math.random() - 0.3) * 8e12));
  for (const t of edges) {
    const d = new Date(t);
    assert.equal(isoString(d), d.toISOString(), `at ${t}`);
  }
  assert.throws(() => isoString(new Date(NaN)), RangeError);
});

Deno.test("parseTimestamptz reads PostgreSQL's UTC text and JSON timestamps as new Date(text) does", () => {
  const cases = [
    "2026-11-25 03:00:28+00",
    "2026-11-25 03:00:28.7+00",
    "2026-11-25 03:00:28.78+00",
    "2026-11-25 03:00:28.786+00",
    "2026-11-25 03:00:28.7861+00",
    "2026-11-25 03:00:28.786123+00",
    "2026-11-25 03:00:28.999999+00",
    "2026-11-25T03:00:28.786123+00:00",
    "2026-11-25T03:00:28+00:00",
    "2026-11-25T03:00:28.5+00:00",
    "2026-11-25T03:00:28.5+05:30",
    "2026-11-25T03:00:28.5+00:30",
    "2026-11-25 03:00:28.5+00:00",
    "1970-01-01 00:00:00+00",
    "0099-06-01 12:00:00+00",
    "0001-01-01 00:00:00+00 BC",
    "12026-11-25 03:00:28+00",
    "2026-11-25 03:00:28.5+05:30",
    "2026-11-25 03:00:28-08",
    "infinity",
    "-infinity",
  ];
  for (let i = 0; i < 20_000; i++) {
    const d = new Date(Math.floor(Math.random() * 4e12));
    const text = pgText(d, Math.floor(Math.random() * 1000));
    cases.push(text, `${text.slice(0, 10)}T${text.slice(11)}:00`); // and as JSON writes it
  }
  for (const s of cases) {
    const want = new Date(s).getTime();
    const got = parseTimestamptz(s).getTime();
    assert.ok(Object.is(got, want), `${s}: ${got} != ${want}`);
  }
});

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

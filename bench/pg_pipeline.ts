/**
 * The server's PostgreSQL client against postgres.js on the same small
 * statement: 32 callers each running `SELECT $1::int + 1, now()` in a loop,
 * 20,000 statements per round, three rounds in which the subjects take turns.
 * Prints statements per second and the CPU per statement of this process and
 * of every PostgreSQL process (from /proc), so the cost on both sides shows. postgres.js runs at
 * its fastest pool size (one connection here: `deno task bench`'s sweep) and,
 * for reference, at 4; the own client also with unnamed statements (poolers).
 *
 *   deno run --lock=deno.dev.lock -A bench/pg_pipeline.ts [postgres-url]
 */
import postgres from "postgres";
import { Pool } from "../server/db/pg/pool.ts";
import { parseConnectionString } from "../server/db/pg/options.ts";
import { postgresUrl } from "../tests/helpers/bench_process.ts";
import { cpuTicks, postgresTicks, postgresTicksSince } from "./cpu.ts";

const url = Deno.args[0] ?? postgresUrl();
const ROUNDS = 3;
const N = 20_000;
const CALLERS = 32;
const TEXT = "SELECT $1::int + 1 AS x, now() AS t";

const pool = new Pool(parseConnectionString(url), { max: 50 });
const unnamed = new Pool({ ...parseConnectionString(url), unnamedStatements: true }, { max: 50 });
const sql1 = postgres(url, { max: 1, prepare: true, onnotice: () => {} });
const sql4 = postgres(url, { max: 4, prepare: true, onnotice: () => {} });
const subjects: [string, (i: number) => Promise<unknown>][] = [
  ["server/db/pg (max 50, 4 shared)", (i) => pool.query(TEXT, [i])],
  ["postgres.js (max 1, its fastest)", (i) => sql1.unsafe(TEXT, [i], { prepare: true })],
  ["postgres.js (max 4)", (i) => sql4.unsafe(TEXT, [i], { prepare: true })],
  ["server/db/pg, unnamed statements", (i) => unnamed.query(TEXT, [i])],
];
try {
  // Rounds alternate the subjects, so a change in the machine's load falls on all of them alike.
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, run] of subjects) {
      const pg0 = postgresTicks();
      const self0 = cpuTicks(Deno.pid);
      const t0 = performance.now();
      let next = 0;
      await Promise.all(Array.from({ length: CALLERS }, async () => {
        while (next < N) await run(next++);
      }));
      const ms = performance.now() - t0;
      const self = cpuTicks(Deno.pid) - self0;
      const pg = postgresTicksSince(pg0);
      console.log(
        `${name} round ${round}: ${Math.round((N / ms) * 1000)} statements/s, ` +
          `client ${((self * 10_000) / N).toFixed(1)} µs and PostgreSQL ${
            ((pg * 10_000) / N).toFixed(1)
          } µs of CPU per statement`,
      );
    }
  }
} finally {
  await pool.end();
  await unnamed.end();
  await sql1.end({ timeout: 5 });
  await sql4.end({ timeout: 5 });
}

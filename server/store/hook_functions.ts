/**
 * Auth hooks that are PostgreSQL functions (`pg-functions://<db>/<schema>/<fn>`,
 * auth/hooks.ts): one call of `schema.fn(payload::jsonb)` under the hook's own
 * statement_timeout.
 */
import type { Db, Queryable } from "../db/db.ts";

/** Calls hook functions in one database. */
export class HookFunctionStore {
  constructor(readonly db: Db) {}

  /**
   * Calls `"schema"."fn"($1::jsonb)` with `payload` and returns its result
   * (a JSON object, its text on some drivers, or null). In `q`'s transaction
   * when given (a second connection could wait on the locks it holds, and
   * PGlite has only one), else in a transaction of its own; the transaction's
   * statement_timeout is put back afterwards.
   */
  async call(
    schema: string,
    fn: string,
    payload: unknown,
    timeoutMs: number,
    q?: Queryable,
  ): Promise<unknown> {
    const run = async (tx: Queryable) => {
      // The hook's own statement_timeout, then the transaction's again (an outer one goes on).
      const [before] = await tx.query<{ statement_timeout: string }>("SHOW statement_timeout");
      await tx.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
      const [row] = await tx.query<{ out: unknown }>(
        `SELECT "${schema}"."${fn}"($1::jsonb) AS out`,
        [JSON.stringify(payload)],
      );
      await tx.query("SELECT set_config('statement_timeout', $1, true)", [
        before.statement_timeout,
      ]);
      return row?.out;
    };
    return q ? await run(q) : await this.db.transaction(run);
  }
}

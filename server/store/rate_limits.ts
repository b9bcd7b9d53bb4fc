/**
 * Per-IP request counters shared by every server process (rate_counters):
 * one row per key and fixed window.
 */
import type { Db } from "../db/db.ts";

/** The rate_counters table of one database. */
export class RateLimitStore {
  readonly #t: string;

  constructor(readonly db: Db) {
    this.#t = db.t("rate_counters");
  }

  /** Counts one hit of `key` in the window starting at `windowStart`; returns the count. */
  async increment(key: string, windowStart: Date): Promise<number> {
    const rows = await this.db.query<{ count: number }>(
      `INSERT INTO ${this.#t} (key, window_start, count) VALUES ($1, $2, 1)
       ON CONFLICT (key, window_start) DO UPDATE SET count = ${this.#t}.count + 1
       RETURNING count::int AS count`,
      [key, windowStart],
    );
    return rows[0]?.count ?? 1;
  }

  /** Removes the counters of windows that started before `before`. */
  async pruneBefore(before: Date): Promise<void> {
    await this.db.query(`DELETE FROM ${this.#t} WHERE window_start < $1`, [before]);
  }
}

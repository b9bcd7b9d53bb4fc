/**
 * The `activity_minutes` table: counts per minute and series (sign-ins,
 * sign-ups, refreshes, failed attempts) that every server process adds to,
 * for the console's activity chart (console/figures.ts).
 */
import type { Db } from "../db/db.ts";

/** One minute's count of one series. */
export interface ActivityCount {
  minute: Date;
  series: string;
  count: number;
}

/** Counts per minute, summed across processes. */
export class ActivityStore {
  readonly #db: Db;
  readonly #table: string;

  constructor(db: Db) {
    this.#db = db;
    this.#table = db.t("activity_minutes");
  }

  /** Adds counts in one statement: a row per minute and series, created or added to. */
  async add(counts: readonly ActivityCount[]): Promise<void> {
    if (!counts.length) return;
    const rows = counts.map((c) => ({ m: c.minute.toISOString(), s: c.series, n: c.count }));
    await this.#db.query(
      `INSERT INTO ${this.#table} AS a (minute, series, count)
       SELECT (e->>'m')::timestamptz, e->>'s', (e->>'n')::int FROM jsonb_array_elements($1::jsonb) e
       ON CONFLICT (minute, series) DO UPDATE SET count = a.count + EXCLUDED.count`,
      [JSON.stringify(rows)],
    );
  }

  /** Every count of the minutes from `since` on, oldest first. */
  async since(since: Date): Promise<ActivityCount[]> {
    return await this.#db.query<ActivityCount>(
      `SELECT minute, series, count FROM ${this.#table} WHERE minute >= $1 ORDER BY minute`,
      [since],
    );
  }
}

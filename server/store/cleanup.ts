/**
 * Deletes dead rows, a small batch per statement (GoTrue's
 * `internal/models/cleanup.go` does the same): every statement picks at most
 * `limit` rows with `FOR UPDATE SKIP LOCKED` and deletes them, so
 * - any number of server processes may run it at once: each takes rows no
 *   other holds, none waits for another, and a row is deleted once;
 * - a request that holds one of those rows (a refresh exchange locking its
 *   session) is never waited for: the row is left for a later batch;
 * - each statement is short, so it holds few locks for little time.
 *
 * What is dead is the caller's decision (auth/cleanup.ts): every method takes
 * the cutoff time before which a row is dead. The indexes these statements
 * walk are created by migrations/0013_cleanup_indexes.sql.
 */
import type { Db, Queryable } from "../db/db.ts";

/** The kinds of rows cleaned, as `CleanupStore.delete` names them. */
export const CLEANUP_KINDS = [
  "refresh_tokens",
  "sessions_expired",
  "sessions_timebox",
  "sessions_inactive",
  "one_time_tokens",
  "flow_states",
  "oauth_states",
  "mfa_challenges",
  "send_log",
  "rate_counters",
  "audit_log",
  "activity_minutes",
] as const;
export type CleanupKind = typeof CLEANUP_KINDS[number];

/** The statement of each kind, for tables named by `t` ($1 the cutoff, $2 the batch size). */
export function cleanupStatements(t: (name: string) => string): Record<CleanupKind, string> {
  // $1: the cutoff (rows whose `column` is before it are dead), $2: the batch size.
  // The batch is picked first (an InitPlan: `= ANY(ARRAY(subquery))`) and then deleted by key;
  // with `IN (subquery)` a generic plan, which cannot see the LIMIT, may hash-join the batch
  // against a scan of the whole table. ORDER BY the cutoff's column makes the pick walk that
  // column's index, oldest first, and stop at the live rows; without it a generic plan may
  // scan the table for dead rows that are not there.
  const batch = (table: string, key: string, column: string, also = "TRUE", order = true) =>
    `WITH d AS (
       DELETE FROM ${table} WHERE ${key} = ANY(ARRAY(
         SELECT ${key} FROM ${table} WHERE ${column} < $1 AND ${also}
         ${order ? `ORDER BY ${column}` : ""} LIMIT $2 FOR UPDATE SKIP LOCKED))
       RETURNING 1)
     SELECT count(*)::int AS n FROM d`;
  return {
    // A revoked token is only read again to tell a replay (reuse detection) within the reuse
    // interval and the grace after it; its child points to it by id only, without a key.
    refresh_tokens: batch(t("refresh_tokens"), "id", "updated_at", "revoked"),
    // Deleting a session deletes its refresh tokens (ON DELETE CASCADE).
    sessions_expired: batch(t("sessions"), "id", "not_after"),
    sessions_timebox: batch(t("sessions"), "id", "created_at"),
    // No index (it would be written by every refresh): a scan, in no particular order.
    sessions_inactive: batch(
      t("sessions"),
      "id",
      "COALESCE(refreshed_at, created_at)",
      "TRUE",
      false,
    ),
    one_time_tokens: batch(t("one_time_tokens"), "id", "expires_at"),
    flow_states: batch(t("flow_state"), "id", "created_at"),
    oauth_states: batch(t("oauth_state_uses"), "jti", "expires_at"),
    mfa_challenges: batch(t("mfa_challenges"), "id", "created_at"),
    send_log: batch(t("send_log"), "id", "sent_at"),
    // No single-column key: the row's physical address, which cannot change while the row is
    // locked (FOR UPDATE) until this statement deletes it.
    rate_counters: batch(t("rate_counters"), "ctid", "window_start"),
    audit_log: batch(t("audit_log_entries"), "id", "created_at"),
    // Keyed by (minute, series), whose first column dates the row: its address, as above.
    activity_minutes: batch(t("activity_minutes"), "ctid", "minute"),
  };
}

/** Deletes dead rows of one database in batches. */
export class CleanupStore {
  readonly #db: Db;
  readonly #sql: Record<CleanupKind, string>;

  constructor(db: Db) {
    this.#db = db;
    this.#sql = cleanupStatements((n) => db.t(n));
  }

  /**
   * Deletes at most `limit` rows of `kind` that are dead before `cutoff`
   * and not locked by anyone; how many it deleted.
   */
  async delete(
    kind: CleanupKind,
    cutoff: Date,
    limit: number,
    q: Queryable = this.#db,
  ): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.#sql[kind], [cutoff, limit]);
    return row?.n ?? 0;
  }
}

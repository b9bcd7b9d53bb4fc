/**
 * The `send_log` table: one row per e-mail or SMS sent (or reserved to be
 * sent), which auth/send_limits.ts counts against its limits. A channel's
 * check-then-insert runs under a transaction-level advisory lock
 * ({@link SendLogStore.lockChannel}), so processes take turns.
 */
import type { Db, Queryable } from "../db/db.ts";

/** The send log of one database. */
export class SendLogStore {
  readonly #db: Db;
  readonly #log: string;

  constructor(db: Db) {
    this.#db = db;
    this.#log = db.t("send_log");
  }

  /**
   * Takes the channel's advisory lock until `tx` ends. The key names the
   * table, so two namespaces in one database do not wait for each other.
   */
  async lockChannel(channel: string, tx: Queryable): Promise<void> {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
      `send_log:${this.#log}:${channel}`,
    ]);
  }

  /** When `recipient` last got a message of `kind` on `channel`, or null. */
  async lastSentAt(
    channel: string,
    recipient: string,
    kind: string,
    q: Queryable = this.#db,
  ): Promise<Date | null> {
    const [last] = await q.query<{ sent_at: Date }>(
      `SELECT sent_at FROM ${this.#log} WHERE channel = $1 AND recipient = $2 AND kind = $3
       ORDER BY sent_at DESC LIMIT 1`,
      [channel, recipient, kind],
    );
    return last?.sent_at ?? null;
  }

  /** Messages on `channel` sent after `since`: how many, and the oldest's time. */
  async countSince(
    channel: string,
    since: Date,
    q: Queryable = this.#db,
  ): Promise<{ n: number; oldest: Date | null }> {
    const [row] = await q.query<{ n: number; oldest: Date | null }>(
      `SELECT count(*)::int AS n, min(sent_at) AS oldest FROM ${this.#log}
       WHERE channel = $1 AND sent_at > $2`,
      [channel, since],
    );
    return row;
  }

  /** Records a message; its id. */
  async insert(
    channel: string,
    recipient: string,
    kind: string,
    sentAt: Date,
    q: Queryable = this.#db,
  ): Promise<number> {
    const [row] = await q.query<{ id: number }>(
      `INSERT INTO ${this.#log} (channel, recipient, kind, sent_at) VALUES ($1, $2, $3, $4)
       RETURNING id::int AS id`,
      [channel, recipient, kind, sentAt],
    );
    return row.id;
  }

  async deleteById(id: number, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#log} WHERE id = $1`, [id]);
  }

  /** Deletes the rows sent before `before`. */
  async deleteBefore(before: Date, q: Queryable = this.#db): Promise<void> {
    await q.query(`DELETE FROM ${this.#log} WHERE sent_at < $1`, [before]);
  }
}

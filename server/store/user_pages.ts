/**
 * Keyset pages of the users table for operators (GET /admin/users?after=):
 * newest first, each page found through the created_at index from where the
 * previous one ended, so a page deep in a million users costs what the first
 * does (OFFSET would read and skip every row before it).
 */
import type { Db, Queryable } from "../db/db.ts";
import type { UserRow } from "./users.ts";

/** Where a page starts: just after this row of the previous page. */
export interface UserCursor {
  createdAt: Date;
  id: string;
}

export class UserPageStore {
  readonly #db: Db;
  readonly #users: string;

  constructor(db: Db) {
    this.#db = db;
    this.#users = db.t("users");
  }

  /**
   * Up to `limit` users after `cursor` (from the newest when null) whose e-mail,
   * phone or full name contains `filter` (case-insensitive; "" for all).
   */
  async page(
    filter: string,
    cursor: UserCursor | null,
    limit: number,
    q: Queryable = this.#db,
  ): Promise<UserRow[]> {
    const like = `%${filter.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
    return await q.query<UserRow>(
      `SELECT * FROM ${this.#users}
       WHERE deleted_at IS NULL
         AND ($1 = '' OR email ILIKE $2 OR phone ILIKE $2
              OR raw_user_meta_data->>'full_name' ILIKE $2)
         AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
       ORDER BY created_at DESC, id DESC
       LIMIT $5`,
      [filter, like, cursor?.createdAt ?? null, cursor?.id ?? null, limit],
    );
  }
}

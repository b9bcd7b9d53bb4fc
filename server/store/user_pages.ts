/**
 * Keyset pages of the users table for operators (GET /admin/users?after=):
 * newest first, each page found through the created_at index from where the
 * previous one ended, so a page deep in a million users costs what the first
 * does (OFFSET would read and skip every row before it).
 */
import type { Db, Queryable } from "../db/db.ts";
import type { UserRow } from "./users.ts";
import { filteredPage, userFilterCondition } from "./user_search.ts";

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
   * Up to `limit` users after `cursor` (from the newest when null) matching
   * `filter` ("" for all; store/user_search.ts).
   */
  async page(
    filter: string,
    cursor: UserCursor | null,
    limit: number,
    q: Queryable = this.#db,
  ): Promise<UserRow[]> {
    const after = "($1::timestamptz IS NULL OR (created_at, id) < ($1::timestamptz, $2::uuid))";
    const match = filter ? userFilterCondition(filter, 4) : null;
    const text = match
      ? filteredPage(this.#users, match, {
        where: after,
        order: "{t}.created_at DESC, {t}.id DESC",
        limit: "LIMIT $3",
      })
      : `SELECT * FROM ${this.#users} WHERE deleted_at IS NULL AND ${after}
         ORDER BY created_at DESC, id DESC LIMIT $3`;
    return await q.query<UserRow>(
      text,
      [cursor?.createdAt ?? null, cursor?.id ?? null, limit, ...(match?.params ?? [])],
    );
  }
}

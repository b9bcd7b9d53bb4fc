/**
 * Keyset paging of users for operators: the cursor handed out with one page
 * names the last row shown (created_at and id), opaque to callers.
 */
import type { Db } from "../db/db.ts";
import { type UserCursor, UserPageStore } from "../store/user_pages.ts";
import type { UserRow } from "./users.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function encodeCursor(u: Pick<UserRow, "created_at" | "id">): string {
  const text = `${new Date(u.created_at).toISOString()}_${u.id}`;
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The cursor's row, or a TypeError naming what is wrong with it. */
export function decodeCursor(cursor: string): UserCursor {
  let text = "";
  try {
    text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch { /* refused below */ }
  const [iso, id] = text.split("_");
  const createdAt = new Date(iso ?? "");
  if (!id || !UUID.test(id) || Number.isNaN(createdAt.getTime())) {
    throw new TypeError("after must be a cursor from X-Next-Cursor");
  }
  return { createdAt, id };
}

export class UserPages {
  readonly #store: UserPageStore;

  constructor(db: Db) {
    this.#store = new UserPageStore(db);
  }

  /** A page of users after `after` ("" for the first) and the cursor of the next, if any. */
  async page(
    filter: string,
    after: string,
    limit: number,
  ): Promise<{ users: UserRow[]; next: string | null }> {
    const rows = await this.#store.page(filter, after ? decodeCursor(after) : null, limit + 1);
    const users = rows.slice(0, limit);
    return { users, next: rows.length > limit ? encodeCursor(users[users.length - 1]) : null };
  }
}

/**
 * The `filter` of the admin user list (GET /admin/users, the console's Users
 * page) as SQL. GoTrue's filter (models.FindUsersInAudience) matches a part
 * of the e-mail or of `user_metadata.full_name`; ours matches those
 * case-insensitively and, besides, the phone (its digits, so "+1 555" finds
 * "1555…") and the start of the id ("3f2a" finds ids beginning 3f2a).
 *
 * Each alternative is one an index answers (migration 0023): a part of the
 * e-mail or full name through one pg_trgm GIN index on both, of the phone
 * through another (for parts of three characters or more), the id prefix
 * as a range of the primary key. So a
 * search among a million users reads the few rows that match, not the table
 * (bench/scale.ts measures it and prints the plan).
 *
 * A page of a filtered list finds the matching users first (a MATERIALIZED
 * CTE, `filteredPage`), then sorts and cuts them: the server's statements are
 * prepared, and a generic plan, which cannot know how rare a pattern is,
 * would otherwise walk the created_at index from the newest user and test
 * the filter on each row, reading the whole table for a user who matches alone.
 */

/** The full name in user_metadata, as GoTrue's filter reads it. */
const FULL_NAME = "raw_user_meta_data->>'full_name'";

/** The indexed text of a user's e-mail and full name (the expression of the index, exactly). */
export const SEARCH_TEXT = `(coalesce(email, '') || E'\\n' || coalesce(${FULL_NAME}, ''))`;

/** A WHERE condition and its parameters, numbered from the `first` given. */
export interface SqlCondition {
  sql: string;
  params: unknown[];
}

/** `text` as a LIKE pattern that matches it anywhere (its own `%`, `_` and `\` taken literally). */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

/**
 * The id range a hex prefix stands for ("3f2a" → 3f2a0000-… to 3f2affff-…),
 * or null when the filter cannot be the start of an id.
 */
export function idPrefixRange(filter: string): [string, string] | null {
  const f = filter.toLowerCase();
  // The start of a canonical UUID: hex digits, with dashes only where UUIDs have them.
  if (!/^[0-9a-f-]{1,36}$/.test(f)) return null;
  const canonical = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
  for (let i = 0; i < f.length; i++) {
    if ((f[i] === "-") !== (canonical[i] === "-")) return null;
  }
  const hex = f.replaceAll("-", "");
  const uuid = (h: string) =>
    `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  return [uuid(hex.padEnd(32, "0")), uuid(hex.padEnd(32, "f"))];
}

/** The digits of a phone number as typed ("+1 (555) 010-0123"), or null when it is not one. */
export function phoneDigits(filter: string): string | null {
  if (!/^\+?[0-9 ().-]+$/.test(filter)) return null;
  const digits = filter.replace(/\D/g, "");
  return digits === "" ? null : digits;
}

/**
 * The condition of users matching `filter` (a trimmed, non-empty string),
 * with parameters numbered from `$first`. Deleted users are left to the caller.
 */
export function userFilterCondition(filter: string, first: number): SqlCondition {
  const params: unknown[] = [containsPattern(filter)];
  const text = `$${first}`;
  // The e-mail and the full name share one trigram index (migration 0023's users_search_trgm,
  // on SEARCH_TEXT), searched once; the exact test after it keeps a match from spanning both.
  const alternatives = [
    `(${SEARCH_TEXT} ILIKE ${text} AND (email ILIKE ${text} OR ${FULL_NAME} ILIKE ${text}))`,
  ];
  const digits = phoneDigits(filter);
  if (digits) {
    params.push(containsPattern(digits));
    alternatives.push(`phone LIKE $${first + params.length - 1}`);
  }
  const range = idPrefixRange(filter);
  if (range) {
    params.push(range[0], range[1]);
    const lo = first + params.length - 2;
    alternatives.push(`id BETWEEN $${lo}::uuid AND $${lo + 1}::uuid`);
  }
  return { sql: `(${alternatives.join(" OR ")})`, params };
}

/**
 * The SQL of one page of the users of `table` matching `match`: `where` (on
 * `created_at` and `id`, or "true") narrows the matches, `order` is the
 * ORDER BY of `created_at` and `id` with `{t}` where the table alias goes,
 * `limit` its LIMIT (and OFFSET) clause. Answers whole user rows; with
 * `count`, each also carries `match_count`, how many users match in all (the
 * same search answers both, so the indexes are read once).
 */
export function filteredPage(
  table: string,
  match: SqlCondition,
  page: { where: string; order: string; limit: string; count?: boolean },
): string {
  const order = (alias: string) => page.order.replaceAll("{t}", alias);
  const count = page.count ? ", (SELECT count(*)::int FROM m) AS match_count" : "";
  return `WITH m AS MATERIALIZED (
      SELECT id, created_at FROM ${table} WHERE deleted_at IS NULL AND ${match.sql})
    SELECT u.*${count} FROM (
      SELECT id, created_at FROM m WHERE ${page.where} ORDER BY ${order("m")} ${page.limit}) p
    JOIN ${table} u ON u.id = p.id
    ORDER BY ${order("p")}`;
}

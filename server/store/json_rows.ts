/**
 * Rows a statement returns as one JSON column (`row_to_json`, or
 * `array_to_json(ARRAY(...))` of a child table), read back as the separate
 * queries would give them.
 */
import { parseTimestamptz } from "../util/time.ts";

/**
 * Rows of a JSON column (text on some drivers, parsed on others) with their
 * timestamp members `dates` as Dates, ordered by created_at, then id, as the
 * separate queries order them.
 */
export function jsonRows(v: unknown, dates: readonly string[]): Record<string, unknown>[] {
  const parsed = typeof v === "string" ? JSON.parse(v) : v ?? [];
  const list = (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];
  for (const r of list) {
    for (const k of dates) if (typeof r[k] === "string") r[k] = parseTimestamptz(r[k] as string);
  }
  if (list.length > 1) {
    list.sort((a, b) =>
      (a.created_at as Date).getTime() - (b.created_at as Date).getTime() ||
      (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0)
    );
  }
  return list;
}

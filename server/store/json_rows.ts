/**
 * Rows a statement returns as one JSON column (`row_to_json`, or
 * `array_to_json(ARRAY(...))` of a child table), read back as the separate
 * queries would give them.
 */
/**
 * Rows of a JSON column (text on some drivers, parsed on others) with their
 * timestamp members `dates` as Dates, ordered as the separate queries order
 * them (`ORDER BY created_at, id`): by created_at to the microsecond (the
 * text PostgreSQL wrote, where two rows share a millisecond), then id.
 */
export function jsonRows(v: unknown, dates: readonly string[]): Record<string, unknown>[] {
  const parsed = typeof v === "string" ? JSON.parse(v) : v ?? [];
  const list = (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];
  const created = list.length > 1 ? new Map(list.map((r) => [r, String(r.created_at)])) : null;
  for (const r of list) {
    for (const k of dates) if (typeof r[k] === "string") r[k] = new Date(r[k] as string);
  }
  if (created) {
    list.sort((a, b) =>
      (a.created_at as Date).getTime() - (b.created_at as Date).getTime() ||
      order(created.get(a)!, created.get(b)!) || order(String(a.id), String(b.id))
    );
  }
  return list;
}

/** Text order: within one millisecond, "…00.1234+00:00" after "…00.123+00:00". */
function order(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

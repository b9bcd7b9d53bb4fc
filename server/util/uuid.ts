/** UUIDs as the API takes them (any case), for the layers that check ids before a lookup. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID string. */
export function isUuid(v: unknown): v is string {
  return typeof v === "string" && UUID.test(v);
}

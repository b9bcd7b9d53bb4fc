/**
 * The rules of a user's metadata (`data` of POST /signup and PUT /user, the
 * admin API's `user_metadata` and `app_metadata`): how it is merged and how
 * large it may grow.
 */
import { invalid } from "./errors.ts";

/** How deep a JSON object member (`data`, `user_metadata`, `app_metadata`) may nest. */
export const MAX_OBJECT_DEPTH = 16;
/** How large a JSON object member may be, as UTF-8 JSON (it travels in every access token). */
export const MAX_OBJECT_BYTES = 16 * 1024;

function depth(v: unknown, d = 0): number {
  if (d > MAX_OBJECT_DEPTH || v === null || typeof v !== "object") return d;
  let m = d;
  for (const x of Object.values(v as object)) {
    m = Math.max(m, depth(x, d + 1));
    if (m > MAX_OBJECT_DEPTH) break;
  }
  return m;
}

/**
 * Checks a JSON object that will be stored (a member of the request, or the
 * metadata it merges into): at most MAX_OBJECT_DEPTH levels deep and
 * MAX_OBJECT_BYTES as JSON (400 validation_failed naming `name` otherwise).
 */
export function checkObjectBounds(name: string, v: Record<string, unknown>): void {
  if (depth(v) > MAX_OBJECT_DEPTH) {
    throw invalid(`${name} is nested too deeply (at most ${MAX_OBJECT_DEPTH} levels)`, "parameter");
  }
  const json = JSON.stringify(v);
  // UTF-8 is at most 3 bytes per UTF-16 unit: count exactly only near the limit.
  if (
    json.length > MAX_OBJECT_BYTES / 3 &&
    new TextEncoder().encode(json).length > MAX_OBJECT_BYTES
  ) {
    throw invalid(`${name} is too large (at most ${MAX_OBJECT_BYTES} bytes as JSON)`, "parameter");
  }
}

/** Merges `data` into user_metadata; null values delete keys. */
export function mergeMetadata(
  current: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    // A data property even for "__proto__" (a plain assignment would set the prototype).
    else {
      Object.defineProperty(out, k, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return out;
}

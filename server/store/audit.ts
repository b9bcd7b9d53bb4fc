/**
 * The `audit_log_entries` table (GoTrue's): one JSON payload per entry, with
 * the client's IP address.
 */
import type { Db, Queryable } from "../db/db.ts";

/** An audit_log_entries row as listed. */
export interface AuditRow {
  id: string;
  payload: unknown;
  ip_address: string;
  created_at: Date;
}

/** Payload members a listing can be narrowed by. */
export type AuditPayloadField = "actor_username" | "actor_name" | "action" | "log_type";

/** Which entries a listing shows. */
export interface AuditQuery {
  /** Entries where one of these payload members contains `text` (case-insensitive). */
  match?: { fields: readonly AuditPayloadField[]; text: string };
  limit: number;
  offset: number;
}

const FIELDS: ReadonlySet<string> = new Set<AuditPayloadField>([
  "actor_username",
  "actor_name",
  "action",
  "log_type",
]);

/** The audit log of one database. */
export class AuditStore {
  readonly #db: Db;
  readonly #entries: string;

  constructor(db: Db) {
    this.#db = db;
    this.#entries = db.t("audit_log_entries");
  }

  async insert(payload: Record<string, unknown>, ip: string, q: Queryable = this.#db) {
    await q.query(`INSERT INTO ${this.#entries} (payload, ip_address) VALUES ($1, $2)`, [
      JSON.stringify(payload),
      ip,
    ]);
  }

  /** The entries `query` selects, newest first, and how many it selects in all. */
  async list(query: AuditQuery, q: Queryable = this.#db): Promise<
    { total: number; rows: AuditRow[] }
  > {
    const params: unknown[] = [];
    let where = "";
    if (query.match) {
      const fields = query.match.fields;
      // Member names go into the SQL text: only the known ones.
      if (!fields.length || fields.some((f) => !FIELDS.has(f))) {
        throw new TypeError(`unknown audit payload field in ${JSON.stringify(fields)}`);
      }
      // The text is a substring: LIKE's own characters in it match only themselves.
      params.push(`%${query.match.text.replace(/[\\%_]/g, (m) => `\\${m}`)}%`);
      where = `WHERE ${fields.map((f) => `payload->>'${f}' ILIKE $1`).join(" OR ")}`;
    }
    const [{ total }] = await q.query<{ total: number }>(
      `SELECT count(*)::int AS total FROM ${this.#entries} ${where}`,
      params,
    );
    const rows = await q.query<AuditRow>(
      `SELECT id, payload, ip_address, created_at FROM ${this.#entries} ${where}
       ORDER BY created_at DESC, id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, query.limit, query.offset],
    );
    return { total, rows };
  }
}

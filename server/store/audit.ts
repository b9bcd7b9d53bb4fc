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
  /** Entries by this user (actor_id) or about them (traits.user_id). */
  userId?: string;
  /** Entries whose actor's name or e-mail contains this text (case-insensitive). */
  actor?: string;
  /** Entries whose action contains this text (case-insensitive). */
  action?: string;
  /** Entries written at or after this time. */
  since?: Date;
  /** Entries written before this time. */
  until?: Date;
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
    const conds: string[] = [];
    // The text is a substring: LIKE's own characters in it match only themselves.
    const like = (text: string) => {
      params.push(`%${text.replace(/[\\%_]/g, (m) => `\\${m}`)}%`);
      return `$${params.length}`;
    };
    if (query.match) {
      const fields = query.match.fields;
      // Member names go into the SQL text: only the known ones.
      if (!fields.length || fields.some((f) => !FIELDS.has(f))) {
        throw new TypeError(`unknown audit payload field in ${JSON.stringify(fields)}`);
      }
      const p = like(query.match.text);
      conds.push(`(${fields.map((f) => `payload->>'${f}' ILIKE ${p}`).join(" OR ")})`);
    }
    if (query.actor) {
      const p = like(query.actor);
      conds.push(`(payload->>'actor_username' ILIKE ${p} OR payload->>'actor_name' ILIKE ${p})`);
    }
    if (query.action) conds.push(`payload->>'action' ILIKE ${like(query.action)}`);
    if (query.userId) {
      params.push(query.userId);
      const p = `$${params.length}`;
      conds.push(`(payload->>'actor_id' = ${p} OR payload->'traits'->>'user_id' = ${p})`);
    }
    if (query.since) {
      params.push(query.since);
      conds.push(`created_at >= $${params.length}`);
    }
    if (query.until) {
      params.push(query.until);
      conds.push(`created_at < $${params.length}`);
    }
    const where = conds.length ? `WHERE ${conds.join(" AND ")}` : "";
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

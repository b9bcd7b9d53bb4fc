/**
 * The audit log (GoTrue's audit_log_entries): who did what, written in the
 * same database so it holds across processes. Actions follow GoTrue's names.
 * Never put secrets in `traits`.
 */
import type { Db, Queryable } from "../db/db.ts";
import {
  type AuditPayloadField,
  type AuditQuery,
  type AuditRow,
  AuditStore,
} from "../store/audit.ts";
import type { Events } from "./events.ts";

export type { AuditRow } from "../store/audit.ts";

/** GoTrue's audit actions. */
export type AuditAction =
  | "login"
  | "logout"
  | "invite_accepted"
  | "user_signedup"
  | "user_invited"
  | "user_deleted"
  | "user_modified"
  | "user_recovery_requested"
  | "user_reauthenticate_requested"
  | "user_confirmation_requested"
  | "user_repeated_signup"
  | "user_updated_password"
  | "token_revoked"
  | "token_refreshed"
  | "generate_recovery_codes"
  | "factor_in_progress"
  | "factor_unenrolled"
  | "challenge_created"
  | "verification_attempted"
  | "factor_deleted"
  | "recovery_codes_deleted"
  | "factor_updated"
  | "mfa_code_login"
  | "identity_unlinked"
  | "identity_linked"
  // ours: an auth hook failed or answered nonsense (auth/hooks.ts)
  | "hook_failed";

/** One audit entry as written. */
export interface AuditEntry {
  action: AuditAction;
  actorId?: string;
  actorUsername?: string;
  actorName?: string;
  logType?: "account" | "team" | "token" | "user" | "factor" | "recovery_codes" | "hook";
  traits?: Record<string, unknown>;
  ip?: string;
}

/**
 * The scopes of an audit search (`GET /admin/audit?query=<scope>:<text>`)
 * and the payload members each looks in, as GoTrue's `internal/api/audit.go`.
 */
const SEARCH_SCOPES: Record<string, readonly AuditPayloadField[]> = {
  author: ["actor_username", "actor_name"],
  action: ["action"],
  type: ["log_type"],
};

/** True when `scope` is one an audit search knows (author, action, type). */
export function isAuditScope(scope: string): boolean {
  // An own member only: `__proto__` or `constructor` must not reach Object.prototype.
  return Object.hasOwn(SEARCH_SCOPES, scope);
}

/** Which page of the audit log to list. */
export interface AuditListing {
  /** Entries whose `scope` members contain `text` (case-insensitive). */
  search?: { scope: string; text: string };
  /** Narrower filters (our extension of GoTrue's listing; see AuditQuery). */
  filters?: Pick<AuditQuery, "userId" | "actor" | "action" | "since" | "until">;
  /** 1-based. */
  page: number;
  perPage: number;
}

/** Writes and lists audit entries. */
/** The stored payload of an entry (GoTrue's audit_log_entries.payload). */
export function auditPayload(e: Omit<AuditEntry, "ip">): Record<string, unknown> {
  return {
    action: e.action,
    actor_id: e.actorId ?? "",
    actor_username: e.actorUsername ?? "",
    actor_name: e.actorName ?? "",
    log_type: e.logType ?? "account",
    traits: e.traits ?? {},
  };
}

export class AuditLog {
  readonly #store: AuditStore;

  constructor(readonly db: Db, readonly events: Events) {
    this.#store = new AuditStore(db);
  }

  /** Records one entry (in `q`'s transaction when given) and emits an `audit` event. */
  async record(e: AuditEntry, q: Queryable = this.db): Promise<void> {
    const payload = auditPayload(e);
    await this.#store.insert(payload, e.ip ?? "", q);
    this.events.emit("audit", payload);
  }

  /**
   * Emits the `audit` event of an entry that a statement of the store wrote
   * itself (the refresh grant's, store/refresh_tokens.ts `rotateLive`).
   */
  recorded(payload: Record<string, unknown>): void {
    this.events.emit("audit", payload);
  }

  /**
   * A page of the log, newest first, and the number of entries in all.
   *
   * @throws {TypeError} when the search's scope is not one of {@link isAuditScope}'s
   */
  async list(o: AuditListing): Promise<{ total: number; rows: AuditRow[] }> {
    let match;
    if (o.search) {
      if (!isAuditScope(o.search.scope)) {
        throw new TypeError(`unknown audit search scope "${o.search.scope.slice(0, 40)}"`);
      }
      match = { fields: SEARCH_SCOPES[o.search.scope], text: o.search.text };
    }
    return await this.#store.list({
      ...o.filters,
      match,
      limit: o.perPage,
      offset: (o.page - 1) * o.perPage,
    });
  }
}

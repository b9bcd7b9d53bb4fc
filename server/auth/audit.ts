/**
 * The audit log (GoTrue's audit_log_entries): who did what, written in the
 * same database so it holds across processes. Actions follow GoTrue's names.
 * Never put secrets in `traits`.
 */
import type { Db, Queryable } from "../db/db.ts";
import type { Events } from "./events.ts";

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
  | "identity_linked";

/** One audit entry as written. */
export interface AuditEntry {
  action: AuditAction;
  actorId?: string;
  actorUsername?: string;
  actorName?: string;
  logType?: "account" | "team" | "token" | "user" | "factor" | "recovery_codes";
  traits?: Record<string, unknown>;
  ip?: string;
}

/** Writes audit entries. */
export class AuditLog {
  readonly table: string;

  constructor(readonly db: Db, readonly events: Events) {
    this.table = db.t("audit_log_entries");
  }

  /** Records one entry (in `q`'s transaction when given) and emits an `audit` event. */
  async record(e: AuditEntry, q: Queryable = this.db): Promise<void> {
    const payload = {
      action: e.action,
      actor_id: e.actorId ?? "",
      actor_username: e.actorUsername ?? "",
      actor_name: e.actorName ?? "",
      log_type: e.logType ?? "account",
      traits: e.traits ?? {},
    };
    await q.query(`INSERT INTO ${this.table} (payload, ip_address) VALUES ($1, $2)`, [
      JSON.stringify(payload),
      e.ip ?? "",
    ]);
    this.events.emit("audit", payload);
  }
}

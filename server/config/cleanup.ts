/** Deleting dead rows in small batches (auth/cleanup.ts), and how long audit entries are kept. */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const CLEANUP_SECTION: SectionDoc = {
  title: "Clean-up",
  about:
    "How often and how much each process deletes of the rows nobody needs any more ([operations.md](operations.md#cleanup)).",
};

/** The clean-up settings. */
export interface CleanupConfig {
  /** Seconds between one process's cleanup passes; 0: this process cleans nothing. */
  intervalSec: number;
  /** Rows deleted per statement. */
  batchSize: number;
  /** How long revoked refresh tokens, ended sessions, flows and challenges are kept, seconds. */
  graceSec: number;
  /** Audit entries older than this are deleted, seconds; 0: kept forever. */
  auditRetentionSec: number;
}

export function readCleanup(r: ConfigReader): CleanupConfig {
  return {
    intervalSec: r.seconds("CLEANUP_INTERVAL", {
      default: 60,
      doc: "how often each process deletes dead rows (0: never); see docs/operations.md",
    }),
    batchSize: r.int("CLEANUP_BATCH_SIZE", {
      default: 100,
      min: 1,
      max: 10000,
      doc: "rows deleted per cleanup statement",
    }),
    graceSec: r.seconds("CLEANUP_GRACE", {
      default: 86400,
      doc: "how long revoked refresh tokens, ended sessions and unused flows are kept",
    }),
    auditRetentionSec: r.seconds("AUDIT_LOG_RETENTION", {
      default: 0,
      doc: "audit entries older than this are deleted (0: kept forever)",
    }),
  };
}

/**
 * The numbered migrations, in order. Listed here (not read from a directory
 * listing) so the set is fixed at build time and `deno compile --include
 * migrations` embeds exactly these files. Never edit a released file: add one.
 */
export const MIGRATIONS: readonly string[] = [
  "0001_init.sql",
  "0003_one_time_token_codes.sql",
  "0005_oauth_state_uses.sql",
  "0007_mfa_totp_step.sql",
  "0009_profile_rev.sql",
  "0011_flow_state_link.sql",
  "0013_cleanup_indexes.sql",
  "0015_profile_doc.sql",
  "0017_session_ids_v7.sql",
  "0019_activity_minutes.sql",
  "0021_drop_profile_doc.sql",
  "0023_user_search.sql",
];

/** Reads one migration's SQL text (works from a compiled binary too). */
export function readMigration(name: string): Promise<string> {
  return Deno.readTextFile(new URL(name, import.meta.url));
}

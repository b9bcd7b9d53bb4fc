-- Indexes the cleanup of dead rows walks (server/store/cleanup.ts), so each of
-- its small batches reads only dead rows, however large the tables are.
-- Revoked refresh tokens, by when they were revoked (a live token is not in it).
CREATE INDEX __NS__refresh_tokens_revoked_at_idx ON __NS__refresh_tokens (updated_at) WHERE revoked;
CREATE INDEX __NS__sessions_not_after_idx ON __NS__sessions (not_after) WHERE not_after IS NOT NULL;
CREATE INDEX __NS__sessions_created_at_idx ON __NS__sessions (created_at);
CREATE INDEX __NS__one_time_tokens_expires_at_idx ON __NS__one_time_tokens (expires_at);
CREATE INDEX __NS__mfa_challenges_created_at_idx ON __NS__mfa_challenges (created_at);
CREATE INDEX __NS__send_log_sent_idx ON __NS__send_log (sent_at);
CREATE INDEX __NS__rate_counters_window_idx ON __NS__rate_counters (window_start);

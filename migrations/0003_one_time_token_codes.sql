-- One-time tokens carry a link secret (token_hash) and, beside it, a short
-- numeric code (code_hash, keyed HMAC) that a user can type instead. `data`
-- keeps what the token's verification needs (PKCE flow id, redirect_to).
ALTER TABLE __NS__one_time_tokens ADD COLUMN code_hash text;
ALTER TABLE __NS__one_time_tokens ADD COLUMN data jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX __NS__one_time_tokens_type_recipient_idx ON __NS__one_time_tokens (token_type, relates_to);

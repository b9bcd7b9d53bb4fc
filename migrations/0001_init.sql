-- Initial schema. __NS__ is replaced by the DB_NAMESPACE prefix ("" or "<ns>_").
-- Column names follow GoTrue's auth schema where one exists, so users can be
-- moved between the two.

CREATE TABLE __NS__users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  aud text NOT NULL DEFAULT 'authenticated',
  role text NOT NULL DEFAULT 'authenticated',
  email text,
  encrypted_password text,
  email_confirmed_at timestamptz,
  invited_at timestamptz,
  confirmation_sent_at timestamptz,
  recovery_sent_at timestamptz,
  email_change text,
  email_change_sent_at timestamptz,
  email_change_confirm_status smallint NOT NULL DEFAULT 0,
  phone text,
  phone_confirmed_at timestamptz,
  phone_change text,
  phone_change_sent_at timestamptz,
  reauthentication_sent_at timestamptz,
  last_sign_in_at timestamptz,
  raw_app_meta_data jsonb NOT NULL DEFAULT '{}'::jsonb,
  raw_user_meta_data jsonb NOT NULL DEFAULT '{}'::jsonb,
  banned_until timestamptz,
  deleted_at timestamptz,
  is_anonymous boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- e-mail addresses are stored lower-cased
CREATE UNIQUE INDEX __NS__users_email_key ON __NS__users (email) WHERE email IS NOT NULL AND deleted_at IS NULL;
CREATE UNIQUE INDEX __NS__users_phone_key ON __NS__users (phone) WHERE phone IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX __NS__users_created_at_idx ON __NS__users (created_at);

CREATE TABLE __NS__identities (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES __NS__users (id) ON DELETE CASCADE,
  provider text NOT NULL,
  provider_id text NOT NULL,
  identity_data jsonb NOT NULL DEFAULT '{}'::jsonb,
  email text,
  last_sign_in_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (provider_id, provider)
);
CREATE INDEX __NS__identities_user_id_idx ON __NS__identities (user_id);
CREATE INDEX __NS__identities_email_idx ON __NS__identities (email);

CREATE TABLE __NS__sessions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES __NS__users (id) ON DELETE CASCADE,
  factor_id uuid,
  aal text NOT NULL DEFAULT 'aal1',
  -- [{"method":"password","timestamp":1700000000}, ...]
  amr jsonb NOT NULL DEFAULT '[]'::jsonb,
  not_after timestamptz,
  refreshed_at timestamptz,
  user_agent text,
  ip text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX __NS__sessions_user_id_idx ON __NS__sessions (user_id);

CREATE TABLE __NS__refresh_tokens (
  id bigserial PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  user_id uuid NOT NULL REFERENCES __NS__users (id) ON DELETE CASCADE,
  session_id uuid NOT NULL REFERENCES __NS__sessions (id) ON DELETE CASCADE,
  parent_id bigint,
  revoked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX __NS__refresh_tokens_session_id_idx ON __NS__refresh_tokens (session_id);
CREATE INDEX __NS__refresh_tokens_parent_id_idx ON __NS__refresh_tokens (parent_id);

-- One-time tokens: e-mail links and codes, SMS codes, reauthentication nonces.
-- Only hashes are stored.
CREATE TABLE __NS__one_time_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES __NS__users (id) ON DELETE CASCADE,
  token_type text NOT NULL,
  token_hash text NOT NULL,
  relates_to text NOT NULL DEFAULT '',
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX __NS__one_time_tokens_hash_idx ON __NS__one_time_tokens (token_hash);
CREATE INDEX __NS__one_time_tokens_user_type_idx ON __NS__one_time_tokens (user_id, token_type);
CREATE INDEX __NS__one_time_tokens_relates_to_idx ON __NS__one_time_tokens (relates_to);

-- PKCE flow state (e-mail links and external providers).
CREATE TABLE __NS__flow_state (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid REFERENCES __NS__users (id) ON DELETE CASCADE,
  auth_code_hash text UNIQUE,
  code_challenge text NOT NULL,
  code_challenge_method text NOT NULL,
  authentication_method text NOT NULL,
  provider_type text NOT NULL DEFAULT '',
  provider_access_token text,
  provider_refresh_token text,
  auth_code_issued_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX __NS__flow_state_created_at_idx ON __NS__flow_state (created_at);

CREATE TABLE __NS__audit_log_entries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  ip_address text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX __NS__audit_log_entries_created_at_idx ON __NS__audit_log_entries (created_at);

CREATE TABLE __NS__mfa_factors (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES __NS__users (id) ON DELETE CASCADE,
  friendly_name text NOT NULL DEFAULT '',
  factor_type text NOT NULL,
  status text NOT NULL DEFAULT 'unverified',
  secret text,
  phone text,
  last_challenged_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX __NS__mfa_factors_user_id_idx ON __NS__mfa_factors (user_id);
CREATE UNIQUE INDEX __NS__mfa_factors_name_key ON __NS__mfa_factors (user_id, friendly_name) WHERE friendly_name <> '';

CREATE TABLE __NS__mfa_challenges (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  factor_id uuid NOT NULL REFERENCES __NS__mfa_factors (id) ON DELETE CASCADE,
  ip_address text NOT NULL DEFAULT '',
  otp_code_hash text,
  attempts integer NOT NULL DEFAULT 0,
  verified_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX __NS__mfa_challenges_factor_id_idx ON __NS__mfa_challenges (factor_id);

-- Mail and SMS actually sent, so send limits hold across server processes.
CREATE TABLE __NS__send_log (
  id bigserial PRIMARY KEY,
  channel text NOT NULL,
  recipient text NOT NULL,
  kind text NOT NULL,
  sent_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX __NS__send_log_recipient_idx ON __NS__send_log (channel, recipient, kind, sent_at);
CREATE INDEX __NS__send_log_sent_at_idx ON __NS__send_log (channel, sent_at);

-- Fixed-window request counters shared by server processes.
CREATE TABLE __NS__rate_counters (
  key text NOT NULL,
  window_start timestamptz NOT NULL,
  count integer NOT NULL DEFAULT 0,
  PRIMARY KEY (key, window_start)
);

-- External-provider sign-ins: the ids (jti) of OAuth `state` values already
-- used at /callback, so a state works once, across server processes.
-- Rows are useless after expires_at and are deleted then.
CREATE TABLE __NS__oauth_state_uses (
  jti text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX __NS__oauth_state_uses_expires_at_idx ON __NS__oauth_state_uses (expires_at);

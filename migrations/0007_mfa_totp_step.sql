-- The last TOTP time step a factor accepted, so a code is accepted once
-- (RFC 6238 section 5.2), across server processes.
ALTER TABLE __NS__mfa_factors ADD COLUMN last_totp_step integer;

-- A revision number of what GET /user answers: the user row, its identities
-- and its MFA factors. Every committed change to any of them gives the user a
-- revision taken from a sequence, never seen before for that user, in the same
-- transaction as the change; so a server that kept the answer built at
-- revision r may answer it again after reading r from the user row alone
-- (one primary-key lookup instead of four tables). server/api/user_profile.ts
--
-- Existing rows start at 0 (a constant default: no table rewrite); new rows and
-- every later change take the sequence's next value (>= 1).
CREATE SEQUENCE __NS__users_profile_rev_seq;
ALTER TABLE __NS__users ADD COLUMN profile_rev bigint NOT NULL DEFAULT 0;
ALTER TABLE __NS__users ALTER COLUMN profile_rev SET DEFAULT nextval('__NS__users_profile_rev_seq');
ALTER SEQUENCE __NS__users_profile_rev_seq OWNED BY __NS__users.profile_rev;

-- Any update of a user row takes a new revision, unless the statement set one.
CREATE FUNCTION __NS__users_profile_rev_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.profile_rev = OLD.profile_rev THEN
    NEW.profile_rev := nextval('__NS__users_profile_rev_seq');
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER __NS__users_profile_rev BEFORE UPDATE ON __NS__users
  FOR EACH ROW EXECUTE FUNCTION __NS__users_profile_rev_on_update();

-- A change of an identity or a factor gives its user (both users, should
-- user_id change) a new revision. Not again when this transaction already
-- wrote the user row (xmin is then our transaction id): that write took a
-- revision that no other state of the user has, and both commit together.
--
-- Lock order: this takes the user row's lock AFTER the identity or factor
-- row's. A transaction that locks the user first and then writes an identity
-- or factor another transaction may be writing could deadlock with it, so
-- code that writes identities or factors of an existing user in a transaction
-- writes the user row first (Users.lockProfile), and PostgreSQL then finds the
-- lock already held here.
CREATE FUNCTION __NS__users_profile_rev_of_child() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    UPDATE __NS__users SET profile_rev = nextval('__NS__users_profile_rev_seq')
      WHERE id = NEW.user_id AND xmin <> pg_current_xact_id()::xid;
  END IF;
  IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.user_id IS DISTINCT FROM NEW.user_id) THEN
    UPDATE __NS__users SET profile_rev = nextval('__NS__users_profile_rev_seq')
      WHERE id = OLD.user_id AND xmin <> pg_current_xact_id()::xid;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER __NS__identities_profile_rev AFTER INSERT OR UPDATE OR DELETE ON __NS__identities
  FOR EACH ROW EXECUTE FUNCTION __NS__users_profile_rev_of_child();
CREATE TRIGGER __NS__mfa_factors_profile_rev AFTER INSERT OR UPDATE OR DELETE ON __NS__mfa_factors
  FOR EACH ROW EXECUTE FUNCTION __NS__users_profile_rev_of_child();

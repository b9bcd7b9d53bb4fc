-- The user's JSON is built in one place, the server's serializer
-- (server/auth/users.ts userToJson): the copy that 0015_profile_doc.sql kept in
-- every user row, its triggers and its builder functions go. The profile
-- revision of 0009_profile_rev.sql stays (GET /user's kept answers rely on it);
-- its two trigger functions return to their 0009 form, which take a new
-- revision without rebuilding anything.
--
-- DROP COLUMN only marks the column dropped: a row leaves the old text behind
-- when it is next written (VACUUM reuses that space), and `VACUUM FULL
-- <namespace>users` at a quiet time gives it all back (docs/database.md).

DROP TRIGGER __NS__users_profile_doc ON __NS__users;
DROP FUNCTION __NS__users_profile_doc_on_insert();

CREATE OR REPLACE FUNCTION __NS__users_profile_rev_on_update() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.profile_rev = OLD.profile_rev THEN
    NEW.profile_rev := nextval('__NS__users_profile_rev_seq');
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION __NS__users_profile_rev_of_child() RETURNS trigger
  LANGUAGE plpgsql AS $$
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

DROP FUNCTION __NS__users_profile_doc(__NS__users);
DROP FUNCTION __NS__profile_ts_ok(timestamptz);
DROP FUNCTION __NS__profile_ts(timestamptz);
DROP FUNCTION __NS__profile_json_object(jsonb);
DROP FUNCTION __NS__profile_json(jsonb);
DROP FUNCTION __NS__profile_json_number(numeric);

ALTER TABLE __NS__users DROP COLUMN profile_doc;

-- GET /user's answer, built at write time: every user row carries
-- `profile_doc`, the exact JSON text the server's serializer gives for the
-- user, its identities and its MFA factors (server/auth/users.ts userToJson,
-- identityToJson, server/auth/mfa.ts factorToJson, in the order and form
-- server/store/profile.ts reads them). Triggers build it in the same
-- transaction as any change of the user row, an identity or a factor, as they
-- already give the user a new profile revision (0009_profile_rev.sql); so a
-- server with nothing kept answers GET /user from one primary-key lookup.
--
-- NULL means "build it in the server": rows that existed before this migration
-- (until their next change) and every state this builder does not reproduce
-- byte for byte (a metadata number beyond double range, a timestamp outside the
-- years 1000-9999 or infinite, metadata that is not an object). The server then
-- reads the four tables as before. tests/server/core/profile_doc_test.ts
-- compares this text with the server's own serializer across user states.
--
-- The functions are STABLE, not IMMUTABLE: float8 and to_char output depend on
-- settings (the builder sets extra_float_digits itself; timestamps are
-- formatted in UTC whatever TimeZone is).

ALTER TABLE __NS__users ADD COLUMN profile_doc text;

-- A JSON number as JSON.stringify(JSON.parse(text)) writes it (a double, its
-- shortest round-trip digits, JavaScript's Number::toString layout); NULL when
-- out of the range where that is reproduced here. extra_float_digits = 1 (set
-- by the caller, __NS__users_profile_doc) makes float8 output the shortest
-- round-trip digits.
CREATE FUNCTION __NS__profile_json_number(n numeric) RETURNS text
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  t text; m text; ip text; fp text; digits text; e int := 0; k int; p int; neg boolean;
BEGIN
  IF n = trunc(n) AND abs(n) <= 9007199254740991 THEN
    RETURN trunc(n)::text;
  END IF;
  IF abs(n) >= 1e308 OR abs(n) < 1e-300 THEN
    RETURN NULL;
  END IF;
  t := n::float8::text;
  neg := left(t, 1) = '-';
  IF neg THEN t := substr(t, 2); END IF;
  m := t;
  IF position('e' IN t) > 0 THEN
    m := split_part(t, 'e', 1);
    e := split_part(t, 'e', 2)::int;
  END IF;
  ip := split_part(m, '.', 1);
  fp := split_part(m, '.', 2);
  digits := ip || fp;
  p := length(ip) + e; -- the value is 0.<digits> x 10^p
  WHILE left(digits, 1) = '0' AND length(digits) > 1 LOOP
    digits := substr(digits, 2);
    p := p - 1;
  END LOOP;
  digits := rtrim(digits, '0');
  IF digits = '' THEN RETURN '0'; END IF;
  k := length(digits);
  -- PostgreSQL's shortest digits leave out a decimal that lies exactly halfway
  -- between two doubles and reads back (ties to even) as this one, such as
  -- 43970358967506340 for 43970358967506336, where JavaScript writes the
  -- shorter one: when fewer digits read back as the same double, the server
  -- builds the answer.
  IF k > 1 AND (round(('0.' || digits)::numeric, k - 1)::text || 'e' || p::text)::float8
      = abs(n)::float8 THEN
    RETURN NULL;
  END IF;
  IF k <= p AND p <= 21 THEN
    t := digits || repeat('0', p - k);
  ELSIF 0 < p AND p <= 21 THEN
    t := left(digits, p) || '.' || substr(digits, p + 1);
  ELSIF -6 < p AND p <= 0 THEN
    t := '0.' || repeat('0', -p) || digits;
  ELSE
    t := left(digits, 1) || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END || 'e' ||
      CASE WHEN p - 1 >= 0 THEN '+' ELSE '-' END || abs(p - 1)::text;
  END IF;
  RETURN CASE WHEN neg THEN '-' || t ELSE t END;
END $$;

-- A jsonb value as JSON.stringify(JSON.parse(its text)) writes it: no spaces,
-- an object's array-index keys ("0" to "4294967294") first in numeric order,
-- then the others in jsonb's order (which is the order of its text); NULL when
-- a number inside is out of range (above).
CREATE FUNCTION __NS__profile_json(v jsonb) RETURNS text
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  r text; bad boolean;
BEGIN
  CASE jsonb_typeof(v)
  WHEN 'object' THEN
    SELECT '{' || coalesce(string_agg(x, ',' ORDER BY ixv NULLS LAST, ord), '') || '}',
        coalesce(bool_or(x IS NULL), false)
      INTO r, bad
      FROM (SELECT to_json(key)::text || ':' || CASE jsonb_typeof(value)
                 WHEN 'string' THEN value::text WHEN 'boolean' THEN value::text
                 WHEN 'null' THEN 'null' ELSE __NS__profile_json(value) END AS x,
               CASE WHEN key ~ '^(0|[1-9][0-9]{0,9})$' THEN
                 CASE WHEN key::bigint < 4294967295 THEN key::bigint END END AS ixv,
               ord
             FROM jsonb_each(v) WITH ORDINALITY AS e(key, value, ord)) s;
    RETURN CASE WHEN bad THEN NULL ELSE r END;
  WHEN 'array' THEN
    SELECT '[' || coalesce(string_agg(x, ',' ORDER BY ord), '') || ']',
        coalesce(bool_or(x IS NULL), false)
      INTO r, bad
      FROM (SELECT CASE jsonb_typeof(value)
                 WHEN 'string' THEN value::text WHEN 'boolean' THEN value::text
                 WHEN 'null' THEN 'null' ELSE __NS__profile_json(value) END AS x,
               ord
             FROM jsonb_array_elements(v) WITH ORDINALITY AS e(value, ord)) s;
    RETURN CASE WHEN bad THEN NULL ELSE r END;
  WHEN 'number' THEN
    RETURN __NS__profile_json_number(v::numeric);
  ELSE
    RETURN v::text; -- string (escaped as JSON.stringify does), boolean, null
  END CASE;
END $$;

-- A metadata column as `{ ...value }` then JSON.stringify writes it: an object
-- as above, JSON null as {}; NULL (build in the server) for anything else.
--
-- The common case without a query per object: when no key looks like an array
-- index and every number is an integer of at most 15 digits (outside strings:
-- jsonb writes numbers in plain decimal, never with an exponent), JavaScript
-- writes exactly jsonb's text without the space after each ',' and ':' outside
-- strings. The patterns read strings whole ("..." with \-escapes), so nothing
-- inside a string is taken for a key, a number or a separator.
CREATE FUNCTION __NS__profile_json_object(v jsonb) RETURNS text
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  t text;
BEGIN
  CASE jsonb_typeof(v)
  WHEN 'object' THEN
    t := v::text;
    IF t !~ '"(0|[1-9][0-9]{0,9})": '
        AND regexp_replace(t, '"(?:[^"\\]|\\.)*"', '', 'g') !~ '[.]|[0-9]{16}' THEN
      RETURN regexp_replace(t, '("(?:[^"\\]|\\.)*")|([,:]) ', '\1\2', 'g');
    END IF;
    RETURN __NS__profile_json(v);
  WHEN 'null' THEN
    RETURN '{}';
  ELSE
    RETURN NULL;
  END CASE;
END $$;

-- A timestamp as isoString (server/util/time.ts) writes it, quoted: UTC,
-- milliseconds truncated; NULL for NULL. Only for the years 1000-9999 (the
-- caller checks, __NS__profile_ts_ok).
CREATE FUNCTION __NS__profile_ts(t timestamptz) RETURNS text
  LANGUAGE sql STABLE AS $$
  SELECT '"' || to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') || 'Z"'
$$;

CREATE FUNCTION __NS__profile_ts_ok(t timestamptz) RETURNS boolean
  LANGUAGE sql STABLE AS $$
  SELECT t IS NULL OR (t >= '1000-01-01 00:00:00+00' AND t < '10000-01-01 00:00:00+00')
$$;

-- The answer of GET /user for user row `u` with its identities and factors as
-- this transaction sees them; NULL when the server must build it.
CREATE FUNCTION __NS__users_profile_doc(u __NS__users) RETURNS text
  LANGUAGE plpgsql STABLE SET extra_float_digits = 1 AS $$
DECLARE
  app text; um text; ids text := ''; fs text := ''; r record; x text; confirmed timestamptz;
BEGIN
  IF NOT (__NS__profile_ts_ok(u.email_confirmed_at) AND __NS__profile_ts_ok(u.invited_at)
      AND __NS__profile_ts_ok(u.confirmation_sent_at) AND __NS__profile_ts_ok(u.recovery_sent_at)
      AND __NS__profile_ts_ok(u.email_change_sent_at) AND __NS__profile_ts_ok(u.phone_confirmed_at)
      AND __NS__profile_ts_ok(u.phone_change_sent_at)
      AND __NS__profile_ts_ok(u.reauthentication_sent_at)
      AND __NS__profile_ts_ok(u.last_sign_in_at) AND __NS__profile_ts_ok(u.banned_until)
      AND __NS__profile_ts_ok(u.created_at) AND __NS__profile_ts_ok(u.updated_at)) THEN
    RETURN NULL;
  END IF;
  app := __NS__profile_json_object(u.raw_app_meta_data);
  um := __NS__profile_json_object(u.raw_user_meta_data);
  IF app IS NULL OR um IS NULL THEN RETURN NULL; END IF;
  -- identities and factors in the order of their created_at to the millisecond, then id
  FOR r IN SELECT * FROM __NS__identities i WHERE i.user_id = u.id
      ORDER BY date_trunc('milliseconds', i.created_at), i.id LOOP
    IF NOT (__NS__profile_ts_ok(r.last_sign_in_at) AND __NS__profile_ts_ok(r.created_at)
        AND __NS__profile_ts_ok(r.updated_at)) THEN
      RETURN NULL;
    END IF;
    x := __NS__profile_json_object(r.identity_data);
    IF x IS NULL THEN RETURN NULL; END IF;
    ids := ids || CASE WHEN ids = '' THEN '' ELSE ',' END ||
      '{"identity_id":"' || r.id || '","id":' || to_json(r.provider_id) ||
      ',"user_id":"' || r.user_id || '","identity_data":' || x ||
      ',"provider":' || to_json(r.provider) ||
      coalesce(',"email":' || to_json(r.email), '') ||
      coalesce(',"last_sign_in_at":' || __NS__profile_ts(r.last_sign_in_at), '') ||
      ',"created_at":' || __NS__profile_ts(r.created_at) ||
      ',"updated_at":' || __NS__profile_ts(r.updated_at) || '}';
  END LOOP;
  FOR r IN SELECT * FROM __NS__mfa_factors f WHERE f.user_id = u.id
      ORDER BY date_trunc('milliseconds', f.created_at), f.id LOOP
    IF NOT (__NS__profile_ts_ok(r.last_challenged_at) AND __NS__profile_ts_ok(r.created_at)
        AND __NS__profile_ts_ok(r.updated_at)) THEN
      RETURN NULL;
    END IF;
    fs := fs || CASE WHEN fs = '' THEN '' ELSE ',' END ||
      '{"id":"' || r.id || '","friendly_name":' || coalesce(to_json(r.friendly_name)::text, 'null') ||
      ',"factor_type":' || to_json(r.factor_type) || ',"status":' || to_json(r.status) ||
      ',"created_at":' || __NS__profile_ts(r.created_at) ||
      ',"updated_at":' || __NS__profile_ts(r.updated_at) ||
      CASE WHEN r.factor_type = 'phone' THEN ',"phone":' || to_json(coalesce(r.phone, '')) ELSE '' END ||
      coalesce(',"last_challenged_at":' || __NS__profile_ts(r.last_challenged_at), '') || '}';
  END LOOP;
  confirmed := coalesce(u.email_confirmed_at, u.phone_confirmed_at);
  RETURN '{"id":"' || u.id || '","aud":' || coalesce(to_json(u.aud)::text, 'null') ||
    ',"role":' || coalesce(to_json(u.role)::text, 'null') ||
    ',"email":' || to_json(coalesce(u.email, '')) ||
    coalesce(',"email_confirmed_at":' || __NS__profile_ts(u.email_confirmed_at), '') ||
    ',"phone":' || to_json(coalesce(u.phone, '')) ||
    coalesce(',"phone_confirmed_at":' || __NS__profile_ts(u.phone_confirmed_at), '') ||
    coalesce(',"confirmation_sent_at":' || __NS__profile_ts(u.confirmation_sent_at), '') ||
    coalesce(',"confirmed_at":' || __NS__profile_ts(confirmed), '') ||
    coalesce(',"recovery_sent_at":' || __NS__profile_ts(u.recovery_sent_at), '') ||
    coalesce(',"email_change_sent_at":' || __NS__profile_ts(u.email_change_sent_at), '') ||
    coalesce(',"new_email":' || to_json(nullif(u.email_change, '')), '') ||
    coalesce(',"phone_change_sent_at":' || __NS__profile_ts(u.phone_change_sent_at), '') ||
    coalesce(',"new_phone":' || to_json(nullif(u.phone_change, '')), '') ||
    coalesce(',"invited_at":' || __NS__profile_ts(u.invited_at), '') ||
    coalesce(',"reauthentication_sent_at":' || __NS__profile_ts(u.reauthentication_sent_at), '') ||
    coalesce(',"last_sign_in_at":' || __NS__profile_ts(u.last_sign_in_at), '') ||
    ',"app_metadata":' || app || ',"user_metadata":' || um ||
    ',"identities":[' || ids || ']' ||
    ',"created_at":' || __NS__profile_ts(u.created_at) ||
    ',"updated_at":' || __NS__profile_ts(u.updated_at) ||
    ',"is_anonymous":' || CASE WHEN u.is_anonymous THEN 'true' ELSE 'false' END ||
    coalesce(',"banned_until":' || __NS__profile_ts(u.banned_until), '') ||
    CASE WHEN fs = '' THEN '' ELSE ',"factors":[' || fs || ']' END || '}';
END $$;

-- Inserts and updates of a user row build its answer. An update also takes a
-- new revision unless the statement set one; the child trigger below asks,
-- with the revision -1, for a rebuild that keeps the revision this transaction
-- already gave the row.
CREATE OR REPLACE FUNCTION __NS__users_profile_rev_on_update() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.profile_rev = -1 THEN
    NEW.profile_rev := OLD.profile_rev;
  ELSIF NEW.profile_rev = OLD.profile_rev THEN
    NEW.profile_rev := nextval('__NS__users_profile_rev_seq');
  END IF;
  NEW.profile_doc := __NS__users_profile_doc(NEW);
  RETURN NEW;
END $$;

CREATE FUNCTION __NS__users_profile_doc_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.profile_doc := __NS__users_profile_doc(NEW);
  RETURN NEW;
END $$;
CREATE TRIGGER __NS__users_profile_doc BEFORE INSERT ON __NS__users
  FOR EACH ROW EXECUTE FUNCTION __NS__users_profile_doc_on_insert();

-- A change of an identity or a factor rebuilds its user's answer (both users',
-- should user_id change), with a new revision unless this transaction already
-- wrote the user row (xmin is then our transaction id): that write took a
-- revision no other state of the user has, and both commit together. Lock
-- order as in 0009_profile_rev.sql.
CREATE OR REPLACE FUNCTION __NS__users_profile_rev_of_child() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    UPDATE __NS__users SET profile_rev = CASE WHEN xmin <> pg_current_xact_id()::xid
        THEN nextval('__NS__users_profile_rev_seq') ELSE -1 END
      WHERE id = NEW.user_id;
  END IF;
  IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.user_id IS DISTINCT FROM NEW.user_id) THEN
    UPDATE __NS__users SET profile_rev = CASE WHEN xmin <> pg_current_xact_id()::xid
        THEN nextval('__NS__users_profile_rev_seq') ELSE -1 END
      WHERE id = OLD.user_id;
  END IF;
  RETURN NULL;
END $$;

-- Admin user search (GET /admin/users?filter=, the console's Users page) without reading every
-- user: trigram GIN indexes (pg_trgm) let a part of the e-mail or full name (one index on both)
-- and of the phone digits be found through an index (store/user_search.ts). An id prefix uses
-- the primary key.
--
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: the database's owner may
-- create it. The server's embedded PGlite loads it (db/pglite.ts). Where it cannot be created
-- (no contrib package, no CREATE privilege on the database) the search still works, by reading
-- the table; docs/server/database.md says how to add the extension later and re-run this file's
-- index statements. An extension already created (for instance in Supabase's `extensions`
-- schema) is used where it is.
DO $$
DECLARE
  ext_schema text;
BEGIN
  -- Namespaces of one database migrate concurrently; the extension is the database's.
  PERFORM pg_advisory_xact_lock(hashtext('authsvc_pg_trgm'));
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')
     AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
    BEGIN
      CREATE EXTENSION pg_trgm;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'pg_trgm could not be created (%): user search reads the table', SQLERRM;
    END;
  END IF;
  SELECT quote_ident(n.nspname) INTO ext_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
   WHERE e.extname = 'pg_trgm';
  IF ext_schema IS NULL THEN
    RETURN;
  END IF;
  -- The extension's schema may be one this role cannot use (no USAGE): then no indexes either.
  BEGIN
    -- The e-mail and the full name in one index, so a search reads one (store/user_search.ts
    -- SEARCH_TEXT is this expression, written the same way).
    EXECUTE format(
      'CREATE INDEX IF NOT EXISTS __NS__users_search_trgm ON __NS__users
         USING gin ((coalesce(email, '''') || E''\n'' || coalesce(raw_user_meta_data->>''full_name'', ''''))
           %s.gin_trgm_ops) WHERE deleted_at IS NULL', ext_schema);
    EXECUTE format(
      'CREATE INDEX IF NOT EXISTS __NS__users_phone_trgm ON __NS__users
         USING gin (phone %s.gin_trgm_ops) WHERE deleted_at IS NULL', ext_schema);
  EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'pg_trgm in % cannot be used (%): user search reads the table', ext_schema, SQLERRM;
  END;
END $$;

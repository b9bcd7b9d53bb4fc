-- Session ids in time order (UUID version 7, RFC 9562): 48 bits of the
-- creation time in milliseconds, then the version, the variant and 74 random
-- bits. A new session's id sorts after every older one, so its entries in
-- sessions_pkey and refresh_tokens_session_id_idx land on the right-hand
-- pages the recent sessions already use, instead of a random leaf of a
-- large index (with millions of sessions and refresh tokens, each random leaf
-- touched is a likely read from outside the cache and, the first time after
-- a checkpoint, a full page in the WAL: bench/README.md, "Scale").
-- Session ids are no secret (every access token of the session carries its
-- id next to `iat`); clients see only a UUID, as with GoTrue's. The function's
-- name is specific to sessions so that it does not meet a `uuid_v7()` a shared
-- database may already have.
CREATE FUNCTION __NS__session_id_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

ALTER TABLE __NS__sessions ALTER COLUMN id SET DEFAULT __NS__session_id_v7();

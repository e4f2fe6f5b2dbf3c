-- Schema version 5: least privilege: the waiting token's digest in a column of its own.
-- Released: never edit this file; add a new rung instead (see ARCHITECTURE.md).
-- The waiting token is a secret: whoever holds it can resume the run. The
-- API shows only its digest, which serve read by reading the token. With
-- the digest kept by the database in a column of its own, serve's role
-- needs no privilege on waiting_token at all (docs/operating.md, "Least
-- privilege"): a column-level GRANT leaves it out.

-- function flows_token_digest
CREATE FUNCTION flows_token_digest(token text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT encode(sha256(convert_to(token, 'UTF8')), 'hex')
$$;

-- change table flows_runs
ALTER TABLE flows_runs ADD COLUMN waiting_token_digest text GENERATED ALWAYS AS (flows_token_digest(waiting_token)) STORED;

-- Creates what fence.PG needs in one schema. Run as one implicit
-- transaction, serialised by a transaction-level advisory lock, so that
-- replicas starting together do not trip over each other's CREATE.
-- {schema} is the quoted schema name, {lock} the lock's key.
SELECT pg_advisory_xact_lock({lock});

CREATE SCHEMA IF NOT EXISTS {schema};

-- The highest fence each resource has accepted.
CREATE TABLE IF NOT EXISTS {schema}.fence_highest (
  resource   text PRIMARY KEY,
  fence      bigint NOT NULL CHECK (fence > 0),
  updated_at timestamptz NOT NULL
);

-- Records fence as the highest seen for resource, or, when the resource
-- has seen a higher one, raises SQLSTATE SCF01 with the highest in DETAIL.
-- The error aborts the caller's transaction, so nothing it wrote can
-- commit. An equal fence is accepted: the same holder may write twice.
CREATE OR REPLACE FUNCTION {schema}.fence_check(p_resource text, p_fence bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  seen bigint;
BEGIN
  INSERT INTO {schema}.fence_highest AS h (resource, fence, updated_at)
  VALUES (p_resource, p_fence, clock_timestamp())
  ON CONFLICT (resource) DO UPDATE
    SET fence = EXCLUDED.fence, updated_at = EXCLUDED.updated_at
    WHERE h.fence <= EXCLUDED.fence
  RETURNING h.fence INTO seen;
  IF seen IS NULL THEN
    SELECT h.fence INTO seen FROM {schema}.fence_highest h WHERE h.resource = p_resource;
    RAISE EXCEPTION USING ERRCODE = 'SCF01', MESSAGE = 'stale fence', DETAIL = seen::text;
  END IF;
  RETURN seen;
END
$$;

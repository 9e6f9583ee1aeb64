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

-- One row per slot whose effect fence_once committed: the run key
-- (job@slot), the fence it was committed with, and until when the row is
-- kept. The primary key is what makes the effect once per slot: a second
-- insert of the same key waits for the first transaction and then
-- conflicts with its row, or takes its place if it rolled back.
CREATE TABLE IF NOT EXISTS {schema}.fence_applied (
  run_key    text PRIMARY KEY,
  fence      bigint NOT NULL CHECK (fence > 0),
  applied_at timestamptz NOT NULL,
  keep_until timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS fence_applied_keep_until ON {schema}.fence_applied (keep_until);

-- Records the effect of slot p_key as committed with p_fence, kept until
-- p_retain_us microseconds after the later of now and p_slot; or, when the
-- slot already has a row, raises SQLSTATE SCF02 with that row's fence in
-- DETAIL (empty if the row was pruned meanwhile). The error aborts the
-- caller's transaction, so nothing it wrote can commit.
--
-- Under READ COMMITTED it then deletes up to 16 expired rows that no other
-- transaction holds, so the table prunes itself as it is used; under
-- REPEATABLE READ or SERIALIZABLE it leaves them to PG.Prune, since a
-- row deleted by a concurrent transaction would fail the caller's with a
-- serialization error.
CREATE OR REPLACE FUNCTION {schema}.fence_once(p_key text, p_fence bigint, p_slot timestamptz, p_retain_us bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  at   timestamptz := clock_timestamp();
  seen bigint;
BEGIN
  INSERT INTO {schema}.fence_applied (run_key, fence, applied_at, keep_until)
  VALUES (p_key, p_fence, at, greatest(at, p_slot) + p_retain_us * interval '1 microsecond')
  ON CONFLICT (run_key) DO NOTHING;
  IF NOT FOUND THEN
    SELECT a.fence INTO seen FROM {schema}.fence_applied a WHERE a.run_key = p_key;
    RAISE EXCEPTION USING ERRCODE = 'SCF02', MESSAGE = 'effect already applied', DETAIL = coalesce(seen::text, '');
  END IF;
  IF current_setting('transaction_isolation') = 'read committed' THEN
    DELETE FROM {schema}.fence_applied a WHERE a.run_key IN (
      SELECT e.run_key FROM {schema}.fence_applied e
      WHERE e.keep_until < at
      ORDER BY e.keep_until LIMIT 16
      FOR UPDATE SKIP LOCKED);
  END IF;
END
$$;

-- version 3 (raise it with every change of this file; see ../functions.go)
--
-- The claim signatures that replicas of earlier builds call. {schema} is
-- replaced by the store's quoted schema name.
--
-- Schema version 2's claim (twelve arguments) never checked generations.
-- It is dropped, not kept: a replica of a build that old, still running
-- after an upgrade, fails its claims (a plain error: nothing changes)
-- rather than claiming slots the generation rule forbids; it still renews
-- and finishes the runs it holds.
DROP FUNCTION IF EXISTS {schema}.claim(text, text[], timestamptz[], bigint[], boolean[], integer[], timestamptz[],
    boolean[], text[], boolean[], boolean[], text[]);

-- The claim of the builds of schema versions 3 to 6, which never backfill,
-- that of the builds of versions 8 and 9, which name no spec, and that of
-- the builds of versions 10 to 12 from before NotAfter: the claim of
-- claim.sql with every request's backfill false and spec '', without
-- p_spec, and with no NotAfter, which answer as their own texts did (a
-- request naming no spec is never superseded; one with no NotAfter is
-- never late). A replica of such a build still running beside newer ones
-- calls them and claims as before; they take the same locks in the same
-- order as every other claim, for they are that claim. Drop one only once
-- no build that calls it can be running. The version 8 and 9 signature
-- was claim.sql's own, in plpgsql, before version 10, and the version 10
-- to 12 signature was, before NotAfter (claim.sql version 6): CREATE OR
-- REPLACE turns each into a call of today's, its argument names kept.
CREATE OR REPLACE FUNCTION {schema}.claim(
    p_replica       text,
    p_incarnation   text,
    p_job           text[],
    p_slot          timestamptz[],
    p_lease_us      bigint[],
    p_crash_skip    boolean[],
    p_max_attempts  integer[],
    p_keep_until    timestamptz[],
    p_takeover_only boolean[],
    p_overlap       text[],
    p_term          boolean[],
    p_manual        boolean[],
    p_skipping      boolean[],
    p_reason        text[],
    p_not_before    timestamptz[],
    p_data_loss     text
) RETURNS SETOF {schema}.claim_result
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM {schema}.claim(p_replica, p_incarnation, p_job, p_slot, p_lease_us, p_crash_skip, p_max_attempts,
        p_keep_until, p_takeover_only, p_overlap, p_term, p_manual, p_skipping, p_reason, p_not_before, p_data_loss,
        array_fill(false, ARRAY[cardinality(p_job)]), NULL::text[], NULL::timestamptz[])
$$;

CREATE OR REPLACE FUNCTION {schema}.claim(
    p_replica       text,
    p_incarnation   text,
    p_job           text[],
    p_slot          timestamptz[],
    p_lease_us      bigint[],
    p_crash_skip    boolean[],
    p_max_attempts  integer[],
    p_keep_until    timestamptz[],
    p_takeover_only boolean[],
    p_overlap       text[],
    p_term          boolean[],
    p_manual        boolean[],
    p_skipping      boolean[],
    p_reason        text[],
    p_not_before    timestamptz[],
    p_data_loss     text,
    p_backfill      boolean[]
) RETURNS SETOF {schema}.claim_result
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM {schema}.claim(p_replica, p_incarnation, p_job, p_slot, p_lease_us, p_crash_skip, p_max_attempts,
        p_keep_until, p_takeover_only, p_overlap, p_term, p_manual, p_skipping, p_reason, p_not_before, p_data_loss,
        p_backfill, NULL::text[], NULL::timestamptz[])
$$;

CREATE OR REPLACE FUNCTION {schema}.claim(
    p_replica       text,
    p_incarnation   text,
    p_job           text[],
    p_slot          timestamptz[],
    p_lease_us      bigint[],
    p_crash_skip    boolean[],
    p_max_attempts  integer[],
    p_keep_until    timestamptz[],
    p_takeover_only boolean[],
    p_overlap       text[],
    p_term          boolean[],
    p_manual        boolean[],
    p_skipping      boolean[],
    p_reason        text[],
    p_not_before    timestamptz[],
    p_data_loss     text,
    p_backfill      boolean[],
    p_spec          text[]
) RETURNS SETOF {schema}.claim_result
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM {schema}.claim(p_replica, p_incarnation, p_job, p_slot, p_lease_us, p_crash_skip, p_max_attempts,
        p_keep_until, p_takeover_only, p_overlap, p_term, p_manual, p_skipping, p_reason, p_not_before, p_data_loss,
        p_backfill, p_spec, NULL::timestamptz[])
$$;

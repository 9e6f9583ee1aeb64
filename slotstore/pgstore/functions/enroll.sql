-- version 1 (raise it with every change of this file; see ../functions.go)
--
-- enroll begins, at p_now, the generation of every job of p_jobs that has
-- none, or whose row this cluster's own transactions did not write (a
-- restore wrote it), and returns the generation of each job. It inserts
-- and locks the rows in job order, as claim does (after the fence rows),
-- so enrolls and claims never wait for each other in a cycle. Its last
-- statement runs on a snapshot taken after every row it conflicted with
-- had committed, so a job enrolled concurrently is returned too.
CREATE OR REPLACE FUNCTION {schema}.enroll(p_jobs text[], p_now timestamptz)
RETURNS TABLE (job text, born timestamptz)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_xid   bigint := pg_current_xact_id()::text::bigint;
    v_sysid bigint := (SELECT c.system_identifier FROM pg_control_system() c);
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'slotcron enroll needs isolation level read committed, not %',
            current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
    END IF;
    INSERT INTO {schema}.generations AS g (job, born, xid, sysid)
    SELECT DISTINCT u.job COLLATE "C", p_now, v_xid, v_sysid FROM unnest(p_jobs) AS u(job) ORDER BY 1
    ON CONFLICT (job) DO UPDATE SET born = excluded.born, xid = excluded.xid, sysid = excluded.sysid
    -- Not written by this cluster's own transaction: restored.
    WHERE g.sysid <> excluded.sysid OR (g.xid & 4294967295) <> g.xmin::text::bigint;
    RETURN QUERY SELECT g.job::text, g.born FROM {schema}.generations g WHERE g.job = ANY (p_jobs);
END;
$$;

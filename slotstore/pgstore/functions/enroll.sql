-- version 5 (raise it with every change of this file; see ../functions.go)
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

-- enroll, with specs (p_fp not null), first offers each job's spec to the
-- catalog, in the order of the jobs and, for one job, of the requests: it
-- locks the job's catalog row (claim reads it FOR SHARE after the fence
-- rows and before the generations: catalog rows come before generation
-- rows in every text), applies the rule of slotstore's package
-- documentation (The catalog, and Schedules held as data for the row of a
-- schedule: a live one is left as it is, a deleted one becomes the
-- configuration's), as rules.Offer does, at the database's
-- clock once the row is locked, and keeps what each request left in
-- force. Then it enrolls the jobs as the function above does, and returns
-- one row a request (ord from 1): the job's generation and the spec in
-- force once its own offer was applied; without specs, the spec in force.
CREATE OR REPLACE FUNCTION {schema}.enroll(
    p_jobs       text[],
    p_now        timestamptz,
    p_replica    text,      -- who enrolls; null without specs
    p_fp         text[],    -- each job's spec: its fingerprint; null for no specs
    p_body       bytea[],
    p_rev        bigint[],
    p_supersedes text[]     -- '' for none
)
RETURNS TABLE (ord integer, job text, born timestamptz, fingerprint text, body bytea, revision bigint,
    replica text, since timestamptz)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    i      integer;
    v_cur  {schema}.catalog;
    v_ans  {schema}.catalog[];  -- what each request left in force
    v_now  timestamptz;
    v_us   bigint;
    v_keys integer;
    v_gone boolean;
BEGIN
    FOR i IN SELECT u.n FROM unnest(p_jobs) WITH ORDINALITY AS u(job, n)
        WHERE p_fp IS NOT NULL ORDER BY u.job COLLATE "C", u.n LOOP
        SELECT * INTO v_cur FROM {schema}.catalog c WHERE c.job = p_jobs[i] FOR UPDATE;
        v_now := clock_timestamp();
        v_us := (extract(epoch FROM v_now) * 1000000)::bigint;
        IF NOT FOUND THEN
            -- No spec in force: this one takes force, unless another
            -- enrolment's insert committed first.
            INSERT INTO {schema}.catalog AS c VALUES (p_jobs[i], p_fp[i], coalesce(p_body[i], ''), p_rev[i], p_replica,
                v_now, jsonb_build_object(p_replica, v_us), '[]')
            ON CONFLICT (job) DO NOTHING
            RETURNING c.* INTO v_cur;
            IF NOT FOUND THEN
                -- It had: apply the rule to its row, at the clock once
                -- that row is locked.
                SELECT * INTO v_cur FROM {schema}.catalog c WHERE c.job = p_jobs[i] FOR UPDATE;
                v_now := clock_timestamp();
                v_us := (extract(epoch FROM v_now) * 1000000)::bigint;
            ELSE
                v_ans[i] := v_cur;
                CONTINUE;
            END IF;
        END IF;
        IF v_cur.run <> '' THEN
            IF NOT v_cur.deleted THEN
                -- A live schedule held as data (write_schedules): no
                -- enrolment takes force or carries it.
                v_ans[i] := v_cur;
                CONTINUE;
            END IF;
            -- A deleted schedule: its name is free for the configuration's
            -- job. The entry becomes the configuration's (version and seq
            -- kept), with no carrier, so the spec takes force below.
            v_cur.run := '';
            v_cur.deleted := false;
            v_cur.carriers := '{}';
            UPDATE {schema}.catalog c SET run = '', deleted = false, carriers = '{}' WHERE c.job = p_jobs[i];
        END IF;
        IF v_cur.fingerprint = p_fp[i] THEN
            -- The spec in force: the replica carries it now, its revision
            -- raised to the enrolment's if higher. Keep the 32 most
            -- recent carriers, ties by name.
            v_cur.revision := greatest(v_cur.revision, p_rev[i]);
            v_cur.carriers := v_cur.carriers || jsonb_build_object(p_replica, v_us);
            SELECT count(*) INTO v_keys FROM jsonb_object_keys(v_cur.carriers);
            IF v_keys > 32 THEN
                v_cur.carriers := (SELECT jsonb_object_agg(k.key, k.value) FROM (
                    SELECT e.key, e.value FROM jsonb_each(v_cur.carriers) AS e
                    ORDER BY e.value::bigint DESC, e.key COLLATE "C" LIMIT 32) k);
            END IF;
            UPDATE {schema}.catalog c SET carriers = v_cur.carriers, revision = v_cur.revision WHERE c.job = p_jobs[i];
            v_ans[i] := v_cur;
            CONTINUE;
        END IF;
        -- Another spec than the one in force: the replica no longer
        -- carries that one (a replica name a restart reuses, as a
        -- StatefulSet's), and with no carrier left any spec takes force.
        v_gone := coalesce(v_cur.carriers ? p_replica, false);
        IF v_gone THEN
            v_cur.carriers := v_cur.carriers - p_replica;
        END IF;
        IF v_cur.fingerprint = coalesce(p_supersedes[i], '') OR coalesce(v_cur.carriers, '{}') = '{}' OR (CASE
                WHEN p_rev[i] > 0 AND v_cur.revision > 0 THEN p_rev[i] > v_cur.revision
                ELSE NOT EXISTS (SELECT FROM jsonb_array_elements(v_cur.past) AS x(e) WHERE x.e->>'fp' = p_fp[i]) END) THEN
            -- Another spec takes force: the one in force goes first in
            -- past, which keeps the 32 newest.
            UPDATE {schema}.catalog c SET fingerprint = p_fp[i], body = coalesce(p_body[i], ''), revision = p_rev[i],
                replica = p_replica, since = v_now, carriers = jsonb_build_object(p_replica, v_us),
                past = (SELECT jsonb_agg(x.e ORDER BY x.n) FROM jsonb_array_elements(jsonb_build_array(jsonb_build_object(
                    'fp', v_cur.fingerprint, 'body', translate(encode(v_cur.body, 'base64'), E'\n', ''),
                    'rev', v_cur.revision, 'replica', v_cur.replica,
                    'since_us', (extract(epoch FROM v_cur.since) * 1000000)::bigint, 'until_us', v_us)) || v_cur.past)
                    WITH ORDINALITY AS x(e, n) WHERE x.n <= 32)
            WHERE c.job = p_jobs[i]
            RETURNING c.* INTO v_cur;
        ELSIF v_gone THEN
            UPDATE {schema}.catalog c SET carriers = v_cur.carriers WHERE c.job = p_jobs[i];
        END IF;
        v_ans[i] := v_cur;
    END LOOP;
    RETURN QUERY SELECT u.n::integer, u.job, g.born, a.fingerprint, a.body, a.revision, a.replica, a.since
    FROM unnest(p_jobs) WITH ORDINALITY AS u(job, n)
    JOIN {schema}.enroll(p_jobs, p_now) AS g ON g.job = u.job
    LEFT JOIN LATERAL (
        SELECT (v_ans[u.n]).* WHERE p_fp IS NOT NULL
        UNION ALL
        SELECT c.* FROM {schema}.catalog c WHERE p_fp IS NULL AND c.job = u.job
    ) a ON true;
END;
$$;

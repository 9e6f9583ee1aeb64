-- version 1 (raise it with every change of this file; see ../functions.go)
--
-- write_schedules applies a batch of schedule writes (slotstore.Store.
-- WriteSchedules), each as rules.ApplyWrite does (slotstore's package
-- documentation, Schedules held as data), and returns one row a write (ord
-- from 1): what it did ('changed'; 'same', an idempotent put; or why it was
-- refused: 'not_schedule', 'no_schedule', 'version_mismatch') and the
-- schedule's row after it (before it when refused; nulls for none).
--
-- It first locks the one row of schedule_head, the newest sequence number
-- handed out, and holds it until the batch commits: writers take turns, and
-- sequence numbers are committed in the order they are handed out, so a
-- reader that has read every change up to n never later finds one at or
-- below n. Then, in job order, it locks each job's catalog row (inserting
-- it, for a new schedule, once its writes are decided, or deciding again
-- on the row a concurrent enrolment inserted first), applies that job's
-- writes in request order at the database's clock once the row is locked,
-- and gives each write that changes the row the next sequence number. Last
-- it begins the generations of the jobs it changed that have none, as
-- enroll does (catalog rows, then generation rows, as every text locks
-- them), and notifies p_channel, which the store's watchers listen on.
CREATE OR REPLACE FUNCTION {schema}.write_schedules(
    p_by      text,       -- the writer: the spec record's replica
    p_id      text[],     -- each write's schedule
    p_delete  boolean[],
    p_run     text[],     -- the job it runs; '' for a delete
    p_fp      text[],     -- its spec: fingerprint and body; '' for a delete
    p_body    bytea[],
    p_if      bigint[],   -- the version it expects; -1 for any
    p_channel text        -- notified when the batch changed a schedule
)
RETURNS TABLE (ord integer, outcome text, job text, fingerprint text, body bytea, revision bigint, replica text,
    since timestamptz, carriers jsonb, past jsonb, run text, version bigint, seq bigint, deleted boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    i       integer;
    v_id    text;
    v_ords  integer[];
    v_head  bigint;     -- the newest sequence number before the batch
    v_seq   bigint;     -- the newest one the batch has handed out
    v_next  bigint;
    v_cur   {schema}.catalog;
    v_row   {schema}.catalog;
    v_live  boolean;
    v_now   timestamptz;
    v_us    bigint;
    v_out   text[];
    v_res   {schema}.catalog[];
    v_jobs  text[] := '{}';  -- the jobs the batch changed
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'slotcron write_schedules needs isolation level read committed, not %',
            current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
    END IF;
    SELECT h.seq INTO STRICT v_head FROM {schema}.schedule_head h FOR UPDATE;
    v_seq := v_head;
    FOR v_id, v_ords IN SELECT u.id, array_agg(u.n::integer ORDER BY u.n) FROM unnest(p_id) WITH ORDINALITY AS u(id, n)
        GROUP BY u.id ORDER BY u.id COLLATE "C" LOOP
        LOOP
            SELECT * INTO v_cur FROM {schema}.catalog c WHERE c.job = v_id FOR UPDATE;
            v_now := clock_timestamp();
            v_us := (extract(epoch FROM v_now) * 1000000)::bigint;
            v_row := v_cur;
            v_next := v_seq;
            FOREACH i IN ARRAY v_ords LOOP
                v_live := coalesce(v_row.run <> '' AND NOT v_row.deleted, false);
                IF v_row.job IS NOT NULL AND v_row.run = '' THEN
                    v_out[i] := 'not_schedule';  -- a job of the configuration
                ELSIF NOT p_delete[i] AND v_live AND v_row.run = p_run[i] AND v_row.fingerprint = p_fp[i] THEN
                    v_out[i] := 'same';
                ELSIF p_delete[i] AND NOT v_live THEN
                    v_out[i] := 'no_schedule';
                ELSIF p_if[i] <> -1 AND p_if[i] <> (CASE WHEN v_live THEN v_row.version ELSE 0 END) THEN
                    v_out[i] := 'version_mismatch';
                ELSE
                    -- The write's spec goes in force ('deleted', no body,
                    -- for a delete); the one in force goes first in past,
                    -- which keeps the 32 newest.
                    v_out[i] := 'changed';
                    v_next := v_next + 1;
                    IF v_row.job IS NULL THEN
                        v_row.job := v_id;
                        v_row.past := '[]';
                        v_row.version := 0;
                    ELSE
                        v_row.past := (SELECT jsonb_agg(x.e ORDER BY x.n) FROM jsonb_array_elements(jsonb_build_array(
                            jsonb_build_object('fp', v_row.fingerprint,
                                'body', translate(encode(v_row.body, 'base64'), E'\n', ''),
                                'rev', v_row.revision, 'replica', v_row.replica,
                                'since_us', (extract(epoch FROM v_row.since) * 1000000)::bigint, 'until_us', v_us))
                            || v_row.past) WITH ORDINALITY AS x(e, n) WHERE x.n <= 32);
                    END IF;
                    IF p_delete[i] THEN
                        v_row.fingerprint := 'deleted';
                        v_row.body := '';
                        v_row.deleted := true;
                    ELSE
                        v_row.fingerprint := p_fp[i];
                        v_row.body := coalesce(p_body[i], '');
                        v_row.run := p_run[i];
                        v_row.deleted := false;
                    END IF;
                    v_row.revision := 0;
                    v_row.replica := p_by;
                    v_row.since := v_now;
                    v_row.carriers := '{}';
                    v_row.version := v_row.version + 1;
                    v_row.seq := v_next;
                END IF;
                v_res[i] := v_row;
            END LOOP;
            EXIT WHEN v_next = v_seq;  -- nothing to write
            IF v_cur.job IS NOT NULL THEN
                UPDATE {schema}.catalog c SET fingerprint = v_row.fingerprint, body = v_row.body, revision = v_row.revision,
                    replica = v_row.replica, since = v_row.since, carriers = v_row.carriers, past = v_row.past,
                    run = v_row.run, version = v_row.version, seq = v_row.seq, deleted = v_row.deleted
                WHERE c.job = v_id;
                EXIT;
            END IF;
            INSERT INTO {schema}.catalog SELECT (v_row).* ON CONFLICT (job) DO NOTHING;
            EXIT WHEN FOUND;
            -- An enrolment inserted the row first: decide again on it.
        END LOOP;
        IF v_next > v_seq THEN
            v_seq := v_next;
            v_jobs := v_jobs || v_id;
        END IF;
    END LOOP;
    IF v_seq > v_head THEN
        UPDATE {schema}.schedule_head h SET seq = v_seq WHERE h.one;
        PERFORM FROM {schema}.enroll(v_jobs, clock_timestamp());
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN QUERY SELECT u.n::integer, v_out[u.n], (v_res[u.n]).* FROM generate_series(1, cardinality(p_id)) AS u(n);
END;
$$;

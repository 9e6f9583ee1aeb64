-- A claim with a NotBefore never creates the slot's first marker before it,
-- by the database's clock: it answers "not yet" instead, as a skip before
-- its NotBefore does. Replicas set it to the slot, so one whose clock runs
-- ahead claims the slot when it is due, and every marker a loss of data can
-- take is of a slot older than the generation that begins after the loss.
-- {schema} is replaced by the store's quoted schema name.

CREATE OR REPLACE FUNCTION {schema}.claim(
    p_replica       text,
    p_incarnation   text,          -- stored in the markers the batch wins
    p_job           text[],
    p_slot          timestamptz[],
    p_lease_us      bigint[],
    p_crash_skip    boolean[],     -- on_crash skip
    p_max_attempts  integer[],
    p_keep_until    timestamptz[],
    p_takeover_only boolean[],
    p_overlap       text[],        -- allow | forbid | replace
    p_term          boolean[],     -- a standing lease (a duty's term): no generation check
    p_manual        boolean[],
    p_skipping      boolean[],     -- a skip request, not a claim
    p_reason        text[],        -- a skip's reason; a replace claim's reason for what it replaces
    p_not_before    timestamptz[], -- a skip's or a claim's NotBefore; null for none
    p_data_loss     text           -- the reason of a slot skipped for predating its job's generation
) RETURNS SETOF {schema}.claim_result
LANGUAGE plpgsql VOLATILE
-- Every name below is schema-qualified or built in: no other schema's
-- objects can stand in for them.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now    timestamptz;
    v_floor  bigint;
    v_jobs   text[];        -- the batch's jobs, sorted
    v_last   bigint[];      -- the last fence issued for each of v_jobs
    v_claims text[];        -- the jobs of the batch's claims
    v_gjobs  text[];        -- the jobs with a generation
    v_born   timestamptz[]; -- when the generation of each of v_gjobs began
    v_b      timestamptz;
    v_cur    {schema}.markers;
    v_found  boolean;
    v_dec    text;
    v_j      integer;
    v_fence  bigint;
    v_res    {schema}.claim_result;
BEGIN
    -- Each statement below must see what committed before it started.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'slotcron claim needs isolation level read committed, not %',
            current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
    END IF;

    INSERT INTO {schema}.fences AS f (job, fence)
    SELECT DISTINCT u.job COLLATE "C", 0 FROM unnest(p_job) AS u(job) ORDER BY 1
    ON CONFLICT (job) DO UPDATE SET fence = f.fence WHERE false; -- locks, writes nothing
    SELECT array_agg(f.job ORDER BY f.job), array_agg(f.fence ORDER BY f.job) INTO v_jobs, v_last
    FROM {schema}.fences f WHERE f.job = ANY (p_job);

    v_now := clock_timestamp();
    v_floor := (extract(epoch FROM v_now) * 1000000)::bigint;

    SELECT array_agg(u.job) INTO v_claims FROM unnest(p_job, p_skipping) AS u(job, skipping) WHERE NOT u.skipping;
    IF v_claims IS NOT NULL THEN
        SELECT array_agg(g.job), array_agg(g.born) INTO v_gjobs, v_born
        FROM {schema}.enroll(v_claims, v_now) g;
    END IF;

    FOR i IN 1 .. coalesce(array_length(p_job, 1), 0) LOOP
        SELECT * INTO v_cur FROM {schema}.markers m
        WHERE m.job = p_job[i] AND m.slot = p_slot[i] FOR UPDATE SKIP LOCKED;
        v_found := FOUND;
        IF NOT v_found THEN
            -- No marker, or one another transaction has locked: wait for
            -- that one, and judge the slot, and the requests after it, at
            -- the time the wait ended.
            SELECT * INTO v_cur FROM {schema}.markers m
            WHERE m.job = p_job[i] AND m.slot = p_slot[i] FOR UPDATE;
            v_found := FOUND;
            IF v_found THEN
                v_now := greatest(v_now, clock_timestamp());
                v_floor := greatest(v_floor, (extract(epoch FROM v_now) * 1000000)::bigint);
            END IF;
        END IF;

        -- Decide.
        v_dec := 'lose';
        IF NOT p_skipping[i] THEN
            v_b := v_born[array_position(v_gjobs, p_job[i])];
            IF v_b IS NULL THEN
                RAISE EXCEPTION 'slotcron claim: job % has no generation', p_job[i];
            END IF;
        END IF;
        IF p_skipping[i] THEN
            IF NOT v_found THEN
                IF v_now < p_not_before[i] THEN
                    v_dec := 'not yet';
                ELSE
                    v_dec := 'skip';
                END IF;
            END IF;
        ELSIF NOT v_found THEN
            IF p_takeover_only[i] THEN
                NULL; -- absent
            ELSIF p_slot[i] < v_b AND NOT p_term[i] THEN
                v_dec := 'data loss';
            ELSIF v_now < p_not_before[i] THEN
                -- Before its NotBefore by this clock (a replica whose clock
                -- runs ahead): no first marker yet.
                v_dec := 'not yet';
            ELSE
                v_dec := 'win';
                IF p_overlap[i] = 'forbid' AND EXISTS (
                    SELECT 1 FROM {schema}.markers m
                    WHERE m.job = p_job[i] AND m.state = 'running' AND m.slot <> p_slot[i] AND m.lease_end > v_now
                ) THEN
                    v_dec := 'overlap';
                END IF;
            END IF;
        -- A marker claimed before the generation began came back from
        -- before a loss (a restored backup): its slot may have finished
        -- since, so once no live lease holds it, it is abandoned, never
        -- taken over (slotstore.Decide).
        ELSIF v_cur.state IN ('released', 'retrying', 'running') AND v_cur.claimed_at < v_b AND NOT p_term[i]
                AND (v_cur.state = 'released' OR v_now >= v_cur.lease_end) THEN
            v_dec := 'abandon loss';
        ELSIF v_cur.state = 'released' THEN
            v_dec := 'win';
        ELSIF v_cur.state = 'retrying' THEN
            IF v_now >= v_cur.lease_end THEN
                v_dec := 'win';
            END IF;
        ELSIF v_cur.state = 'running' AND v_now >= v_cur.lease_end THEN
            IF p_crash_skip[i] OR (p_max_attempts[i] > 0 AND v_cur.attempt >= p_max_attempts[i]) THEN
                v_dec := 'abandon';
            ELSE
                v_dec := 'win';
            END IF;
        END IF;

        -- Apply.
        v_res := NULL;
        v_res.ord := i;
        v_res.won := v_dec = 'win';
        v_res.prev_holder := '';
        v_res.retry := false;
        v_res.now := v_now;
        IF v_dec = 'win' THEN
            IF p_overlap[i] = 'replace' AND NOT v_found THEN
                WITH gone AS (
                    UPDATE {schema}.markers m
                    SET state = 'replaced', reason = p_reason[i], lease_end = v_now, finished_at = v_now
                    WHERE m.job = p_job[i] AND m.state = 'running' AND m.slot <> p_slot[i]
                    RETURNING m.slot, m.fence
                )
                SELECT array_agg(g.slot ORDER BY g.slot), array_agg(g.fence ORDER BY g.slot)
                INTO v_res.replaced_slots, v_res.replaced_fences FROM gone g;
            END IF;
            v_j := array_position(v_jobs, p_job[i]);
            v_fence := greatest(v_last[v_j], v_floor) + 1;
            v_last[v_j] := v_fence;
            IF v_found THEN
                v_res.prev_holder := v_cur.holder;
                v_res.retry := v_cur.state = 'retrying';
                UPDATE {schema}.markers m
                SET state = 'running', holder = p_replica, fence = v_fence, attempt = m.attempt + 1,
                    claimed_at = v_now, lease_end = v_now + p_lease_us[i] * interval '1 microsecond',
                    keep_until = p_keep_until[i], finished_at = NULL, outcome = '', error = '', duration_ns = 0,
                    reason = '', incarnation = p_incarnation
                WHERE m.job = p_job[i] AND m.slot = p_slot[i]
                RETURNING m.* INTO v_cur;
            ELSE
                INSERT INTO {schema}.markers AS m (job, slot, state, holder, fence, attempt, claimed_at, lease_end,
                    keep_until, manual, incarnation)
                VALUES (p_job[i], p_slot[i], 'running', p_replica, v_fence, 1, v_now,
                    v_now + p_lease_us[i] * interval '1 microsecond', p_keep_until[i], p_manual[i], p_incarnation)
                RETURNING m.* INTO v_cur;
            END IF;
        ELSIF v_dec IN ('abandon', 'abandon loss') THEN
            UPDATE {schema}.markers m
            SET state = 'abandoned', finished_at = v_now,
                reason = CASE WHEN v_dec = 'abandon loss' THEN p_data_loss
                              WHEN p_crash_skip[i] THEN 'on_crash skip' ELSE 'max attempts' END
            WHERE m.job = p_job[i] AND m.slot = p_slot[i]
            RETURNING m.* INTO v_cur;
        ELSIF v_dec IN ('skip', 'overlap', 'data loss') THEN
            INSERT INTO {schema}.markers AS m (job, slot, state, holder, fence, attempt, claimed_at, lease_end,
                keep_until, finished_at, reason, manual)
            VALUES (p_job[i], p_slot[i], 'skipped', p_replica, 0, 0, v_now, v_now, p_keep_until[i], v_now,
                CASE v_dec WHEN 'overlap' THEN 'overlap' WHEN 'data loss' THEN p_data_loss ELSE p_reason[i] END,
                p_manual[i] AND NOT p_skipping[i])
            RETURNING m.* INTO v_cur;
        END IF;

        IF v_found OR v_dec NOT IN ('lose', 'not yet') THEN
            v_res.job := v_cur.job;
            v_res.slot := v_cur.slot;
            v_res.state := v_cur.state;
            v_res.holder := v_cur.holder;
            v_res.fence := v_cur.fence;
            v_res.attempt := v_cur.attempt;
            v_res.claimed_at := v_cur.claimed_at;
            v_res.lease_end := v_cur.lease_end;
            v_res.keep_until := v_cur.keep_until;
            v_res.finished_at := v_cur.finished_at;
            v_res.outcome := v_cur.outcome;
            v_res.error := v_cur.error;
            v_res.duration_ns := v_cur.duration_ns;
            v_res.reason := v_cur.reason;
            v_res.manual := v_cur.manual;
            v_res.incarnation := v_cur.incarnation;
        ELSE
            -- No marker: a takeover-only claim (absent), or a skip or a
            -- claim before its time (not yet).
            v_res.job := '';
            v_res.slot := '0001-01-01 00:00:00+00';
            v_res.state := '';
            v_res.holder := '';
            v_res.fence := 0;
            v_res.attempt := 0;
            v_res.claimed_at := '0001-01-01 00:00:00+00';
            v_res.lease_end := '0001-01-01 00:00:00+00';
            v_res.keep_until := '0001-01-01 00:00:00+00';
            v_res.outcome := '';
            v_res.error := '';
            v_res.duration_ns := 0;
            v_res.reason := '';
            v_res.manual := false;
            v_res.incarnation := '';
        END IF;
        RETURN NEXT v_res;
    END LOOP;

    UPDATE {schema}.fences AS f SET fence = u.fence
    FROM unnest(v_jobs, v_last) AS u(job, fence)
    WHERE f.job = u.job AND f.fence < u.fence;
END;
$$;

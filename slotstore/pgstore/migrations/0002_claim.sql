-- The claim of a batch, as one function so that a batch is one statement
-- and one round trip. It encodes the decision table of slotstore.Decide,
-- Apply, Supersede and ApplySkip. {schema} is replaced by the store's quoted
-- schema name.

-- One row per request of a batch: the decision and the marker it left.
CREATE TYPE {schema}.claim_result AS (
    ord             integer,       -- position of the request, from 1
    won             boolean,
    prev_holder     text,          -- holder of the marker a winning claim replaced
    retry           boolean,       -- the winning claim took a retrying slot
    job             text,
    slot            timestamptz,
    state           text,
    holder          text,
    fence           bigint,
    attempt         integer,
    claimed_at      timestamptz,
    lease_end       timestamptz,
    keep_until      timestamptz,
    finished_at     timestamptz,
    outcome         text,
    error           text,
    duration_ns     bigint,
    reason          text,
    manual          boolean,
    replaced_slots  timestamptz[], -- the claims a replace claim superseded, oldest first
    replaced_fences bigint[],
    now             timestamptz    -- the database time the batch was decided at
);

-- claim decides every request of a batch, in request order: a claim, or,
-- where p_skipping is true, a skip (Store.Skip).
--
--  1. It locks the fence row of every job of the batch in job order,
--     creating missing rows. Every claim and skip does this before it reads
--     a marker, so claims of a job take turns (no other transaction creates
--     a marker of the job meanwhile) and two batches can never wait for
--     each other in a cycle.
--  2. It reads the clock once the locks are held, so the claims of a job
--     see times that follow each other, and decides the whole batch at that
--     one instant.
--  3. For each request it locks the slot's marker row (SELECT ... FOR
--     UPDATE: under READ COMMITTED it waits for a fenced mutation or a
--     prune in progress and reads the row that one left), decides on it,
--     and writes. A claim with an overlap policy that would create the
--     slot's first marker reads the job's running markers (markers_running):
--     forbid skips the slot if one has a live lease; replace supersedes
--     them all, in an UPDATE that locks each and checks it is still
--     running. Each request sees what the requests before it wrote.
--  4. Each job's winners take, in request order, the fences after the
--     larger of the job's last fence and the clock in microseconds; the
--     fence rows are raised at the end, in the same transaction.
CREATE FUNCTION {schema}.claim(
    p_replica       text,
    p_job           text[],
    p_slot          timestamptz[],
    p_lease_us      bigint[],
    p_crash_skip    boolean[],     -- on_crash skip
    p_max_attempts  integer[],
    p_keep_until    timestamptz[],
    p_takeover_only boolean[],
    p_overlap       text[],        -- allow | forbid | replace
    p_manual        boolean[],
    p_skipping      boolean[],     -- a skip request, not a claim
    p_reason        text[]         -- a skip's reason; a replace claim's reason for what it replaces
) RETURNS SETOF {schema}.claim_result
LANGUAGE plpgsql VOLATILE
-- Every name below is schema-qualified or built in: no other schema's
-- objects can stand in for them.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now    timestamptz;
    v_floor  bigint;
    v_jobs   text[];   -- the batch's jobs, sorted
    v_last   bigint[]; -- the last fence issued for each of v_jobs
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

    FOR i IN 1 .. coalesce(array_length(p_job, 1), 0) LOOP
        SELECT * INTO v_cur FROM {schema}.markers m
        WHERE m.job = p_job[i] AND m.slot = p_slot[i] FOR UPDATE;
        v_found := FOUND;

        -- Decide.
        v_dec := 'lose';
        IF p_skipping[i] THEN
            IF NOT v_found THEN
                v_dec := 'skip';
            END IF;
        ELSIF NOT v_found THEN
            IF NOT p_takeover_only[i] THEN
                v_dec := 'win';
                IF p_overlap[i] = 'forbid' AND EXISTS (
                    SELECT 1 FROM {schema}.markers m
                    WHERE m.job = p_job[i] AND m.state = 'running' AND m.slot <> p_slot[i] AND m.lease_end > v_now
                ) THEN
                    v_dec := 'overlap';
                END IF;
            END IF;
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
                    reason = ''
                WHERE m.job = p_job[i] AND m.slot = p_slot[i]
                RETURNING m.* INTO v_cur;
            ELSE
                INSERT INTO {schema}.markers AS m (job, slot, state, holder, fence, attempt, claimed_at, lease_end,
                    keep_until, manual)
                VALUES (p_job[i], p_slot[i], 'running', p_replica, v_fence, 1, v_now,
                    v_now + p_lease_us[i] * interval '1 microsecond', p_keep_until[i], p_manual[i])
                RETURNING m.* INTO v_cur;
            END IF;
        ELSIF v_dec = 'abandon' THEN
            UPDATE {schema}.markers m
            SET state = 'abandoned', finished_at = v_now,
                reason = CASE WHEN p_crash_skip[i] THEN 'on_crash skip' ELSE 'max attempts' END
            WHERE m.job = p_job[i] AND m.slot = p_slot[i]
            RETURNING m.* INTO v_cur;
        ELSIF v_dec IN ('skip', 'overlap') THEN
            INSERT INTO {schema}.markers AS m (job, slot, state, holder, fence, attempt, claimed_at, lease_end,
                keep_until, finished_at, reason, manual)
            VALUES (p_job[i], p_slot[i], 'skipped', p_replica, 0, 0, v_now, v_now, p_keep_until[i], v_now,
                CASE WHEN v_dec = 'overlap' THEN 'overlap' ELSE p_reason[i] END, p_manual[i] AND NOT p_skipping[i])
            RETURNING m.* INTO v_cur;
        END IF;

        IF v_found OR v_dec <> 'lose' THEN
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
        ELSE
            -- Absent: a takeover-only claim of a slot without a marker.
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
        END IF;
        RETURN NEXT v_res;
    END LOOP;

    UPDATE {schema}.fences AS f SET fence = u.fence
    FROM unnest(v_jobs, v_last) AS u(job, fence)
    WHERE f.job = u.job AND f.fence < u.fence;
END;
$$;

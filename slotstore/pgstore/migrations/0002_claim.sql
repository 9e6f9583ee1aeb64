-- The claim of a batch, as one function so that a batch is one statement
-- and one round trip. It encodes the decision table of slotstore.Decide and
-- slotstore.Apply. {schema} is replaced by the store's quoted schema name.

-- One row per request of a batch: the decision and the marker it left.
CREATE TYPE {schema}.claim_result AS (
    ord         integer,     -- position of the request, from 1
    won         boolean,
    prev_holder text,        -- holder of the marker a winning claim replaced
    job         text,
    slot        timestamptz,
    state       text,
    holder      text,
    fence       bigint,
    attempt     integer,
    claimed_at  timestamptz,
    lease_end   timestamptz,
    keep_until  timestamptz,
    finished_at timestamptz,
    outcome     text,
    error       text,
    duration_ns bigint,
    now         timestamptz  -- the database time the batch was decided at
);

-- claim decides every request of a batch, in request order.
--
--  1. It locks the fence row of every job of the batch in job order,
--     creating missing rows. Every claim does this before it reads a marker,
--     so claims of a job take turns and two batches can never wait for each
--     other in a cycle. Fenced mutations lock one marker row and nothing
--     else, so they cannot close a cycle either.
--  2. It reads the clock once the locks are held, so the claims of a job
--     see times that follow each other, and decides the whole batch at that
--     one instant.
--  3. One statement, with a snapshot taken after the locks were granted,
--     decides every request from its marker, numbers the winners of each
--     job in request order from the larger of the job's last fence and the
--     clock in microseconds, writes the new
--     markers (INSERT), the takeovers and claims of released slots (UPDATE
--     conditional on the state and fence it read and on the lease having
--     ended), the abandonments (likewise conditional), and raises the
--     fence rows. Of the requests naming one slot, the first decides (the
--     first that is not takeover-only, when the slot has no marker); those
--     before it are absent, those after it see the marker it left.
--  4. The writes match exactly the markers as read; the statement computes
--     the markers they leave rather than joining written rows back to their
--     requests. If a write matched nothing, a fenced mutation or a prune
--     changed that marker after the read: the statement's writes are rolled
--     back to a savepoint and the statement runs again with a fresh
--     snapshot, so every decision is taken on the marker it changes and the
--     fences stay in request order.
CREATE FUNCTION {schema}.claim(
    p_replica       text,
    p_job           text[],
    p_slot          timestamptz[],
    p_lease_us      bigint[],
    p_skip          boolean[],
    p_max_attempts  integer[],
    p_keep_until    timestamptz[],
    p_takeover_only boolean[]
) RETURNS SETOF {schema}.claim_result
LANGUAGE plpgsql VOLATILE
-- Every name below is schema-qualified or built in: no other schema's
-- objects can stand in for them.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now  timestamptz;
    v_out  {schema}.claim_result[];
    v_miss bigint;
BEGIN
    -- Each statement below must see what committed before it started.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'slotcron claim needs isolation level read committed, not %',
            current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
    END IF;

    INSERT INTO {schema}.fences AS f (job, fence)
    SELECT DISTINCT u.job COLLATE "C", 0 FROM unnest(p_job) AS u(job) ORDER BY 1
    ON CONFLICT (job) DO UPDATE SET fence = f.fence WHERE false; -- locks, writes nothing

    FOR v_try IN 1..5 LOOP
        v_now := clock_timestamp();
        BEGIN
            WITH req AS (
                SELECT r.job COLLATE "C" AS job, r.slot, r.lease_us * interval '1 microsecond' AS lease,
                       r.skip, r.max_attempts, r.keep_until, r.takeover_only, r.ord::integer AS ord
                FROM unnest(p_job, p_slot, p_lease_us, p_skip, p_max_attempts, p_keep_until, p_takeover_only)
                     WITH ORDINALITY AS r(job, slot, lease_us, skip, max_attempts, keep_until, takeover_only, ord)
            ),
            grouped AS (
                -- active: the request that decides the slot.
                SELECT req.*, m AS cur,
                       CASE WHEN m.job IS NOT NULL THEN min(req.ord) OVER w
                            ELSE min(req.ord) FILTER (WHERE NOT req.takeover_only) OVER w END AS active
                FROM req LEFT JOIN {schema}.markers m ON m.job = req.job AND m.slot = req.slot
                WINDOW w AS (PARTITION BY req.job, req.slot)
            ),
            decided AS (
                SELECT g.*,
                    CASE
                        WHEN g.active IS NULL OR g.ord < g.active THEN 'absent'
                        WHEN g.ord > g.active THEN 'after'
                        WHEN (g.cur).job IS NULL OR (g.cur).state = 'released' THEN 'win'
                        WHEN (g.cur).state <> 'running' OR v_now < (g.cur).lease_end THEN 'lose'
                        WHEN g.skip OR (g.max_attempts > 0 AND (g.cur).attempt >= g.max_attempts) THEN 'abandon'
                        ELSE 'win'
                    END AS decision
                FROM grouped g
            ),
            numbered AS (
                -- A job's winners take the fences after the larger of its
                -- last fence and the database clock in microseconds: the
                -- clock is a floor that keeps fences growing even if the
                -- fences row lost recent commits (a failover to a replica
                -- that was behind, synchronous_commit off).
                SELECT d.*, CASE WHEN d.decision = 'win' THEN
                           greatest(f.fence, (extract(epoch FROM v_now) * 1000000)::bigint)
                           + count(*) FILTER (WHERE d.decision = 'win') OVER (PARTITION BY d.job ORDER BY d.ord)
                       END AS new_fence
                FROM decided d JOIN {schema}.fences f ON f.job = d.job
            ),
            inserted AS (
                INSERT INTO {schema}.markers AS m (job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until)
                SELECT n.job, n.slot, 'running', p_replica, n.new_fence, 1, v_now, v_now + n.lease, n.keep_until
                FROM numbered n WHERE n.decision = 'win' AND (n.cur).job IS NULL
                ON CONFLICT DO NOTHING
                RETURNING 1
            ),
            taken AS (
                UPDATE {schema}.markers AS m
                SET state = 'running', holder = p_replica, fence = n.new_fence, attempt = m.attempt + 1,
                    claimed_at = v_now, lease_end = v_now + n.lease, keep_until = n.keep_until,
                    finished_at = NULL, outcome = '', error = '', duration_ns = 0
                FROM numbered n
                WHERE n.decision = 'win' AND (n.cur).job IS NOT NULL
                  AND m.job = n.job AND m.slot = n.slot
                  AND m.state = (n.cur).state AND m.fence = (n.cur).fence AND m.attempt = (n.cur).attempt
                  AND (m.state = 'released' OR m.lease_end <= v_now)
                RETURNING 1
            ),
            abandoned AS (
                UPDATE {schema}.markers AS m SET state = 'abandoned', finished_at = v_now
                FROM numbered n
                WHERE n.decision = 'abandon'
                  AND m.job = n.job AND m.slot = n.slot
                  AND m.state = 'running' AND m.fence = (n.cur).fence AND m.lease_end = (n.cur).lease_end
                RETURNING 1
            ),
            raised AS (
                UPDATE {schema}.fences AS f SET fence = w.top
                FROM (SELECT job, max(new_fence) AS top FROM numbered WHERE decision = 'win' GROUP BY job) w
                WHERE f.job = w.job
            ),
            decisive AS (
                -- The marker a deciding request leaves, as the writes above
                -- leave it when they match; computed here so that no
                -- written row needs joining back to its request.
                SELECT n.*, CASE n.decision
                    WHEN 'win' THEN ROW(n.job, n.slot, 'running', p_replica, n.new_fence,
                        COALESCE((n.cur).attempt, 0) + 1, v_now, v_now + n.lease, n.keep_until,
                        NULL, '', '', 0)::{schema}.markers
                    WHEN 'abandon' THEN ROW((n.cur).job, (n.cur).slot, 'abandoned', (n.cur).holder, (n.cur).fence,
                        (n.cur).attempt, (n.cur).claimed_at, (n.cur).lease_end, (n.cur).keep_until,
                        v_now, (n.cur).outcome, (n.cur).error, (n.cur).duration_ns)::{schema}.markers
                    WHEN 'lose' THEN n.cur
                END AS left_row
                FROM numbered n
            ),
            outcome AS (
                -- Requests after the deciding one see the marker it left.
                SELECT d.ord, d.cur, d.decision = 'win' AS won,
                       CASE WHEN d.decision <> 'absent' THEN first_value(d.left_row)
                           OVER (PARTITION BY d.job, d.slot ORDER BY d.ord = d.active DESC NULLS LAST) END AS row
                FROM decisive d
            )
            SELECT array_agg(ROW(
                       o.ord, o.won, CASE WHEN o.won THEN COALESCE((o.cur).holder, '') ELSE '' END,
                       COALESCE((o.row).job, ''), COALESCE((o.row).slot, '0001-01-01 00:00:00+00'),
                       COALESCE((o.row).state, ''), COALESCE((o.row).holder, ''),
                       COALESCE((o.row).fence, 0), COALESCE((o.row).attempt, 0),
                       COALESCE((o.row).claimed_at, '0001-01-01 00:00:00+00'),
                       COALESCE((o.row).lease_end, '0001-01-01 00:00:00+00'),
                       COALESCE((o.row).keep_until, '0001-01-01 00:00:00+00'), (o.row).finished_at,
                       COALESCE((o.row).outcome, ''), COALESCE((o.row).error, ''),
                       COALESCE((o.row).duration_ns, 0), v_now
                   )::{schema}.claim_result ORDER BY o.ord),
                   (SELECT count(*) FROM numbered WHERE decision IN ('win', 'abandon'))
                   - (SELECT count(*) FROM inserted) - (SELECT count(*) FROM taken) - (SELECT count(*) FROM abandoned)
            INTO v_out, v_miss
            FROM outcome o;

            IF v_miss > 0 THEN
                RAISE EXCEPTION USING ERRCODE = 'SC001'; -- undoes this pass's writes
            END IF;
            RETURN QUERY SELECT * FROM unnest(v_out);
            RETURN;
        EXCEPTION WHEN SQLSTATE 'SC001' THEN
            -- A marker changed between this pass's read and its write: read again.
        END;
    END LOOP;
    RAISE EXCEPTION 'slotcron claim: markers kept changing during the claim'
        USING ERRCODE = 'serialization_failure';
END;
$$;

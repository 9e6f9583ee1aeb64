-- version 8 (raise it with every change of this file; see ../functions.go)
--
-- claim decides every request of a batch, in request order: a claim, or,
-- where p_skipping is true, a skip (Store.Skip). It encodes the decision
-- table of slotstore.Decide, Apply, Supersede and ApplySkip; the package
-- documentation (doc.go, Guarantees) says why each step is sound.
--
--  1. It locks the fence row of every job of the batch in job order,
--     creating missing rows. Every claim and skip does this before it
--     creates a marker, so claims of a job take turns (no other transaction
--     creates a marker of the job meanwhile) and two batches can never wait
--     for each other in a cycle. A claim that finds its batch's first fence
--     row locked (another replica is claiming the same slots) waits for that
--     row alone and looks: when every request is decided without a write,
--     it answers at once, never locking the other fence rows nor any
--     marker; otherwise it takes the fence rows, holding no marker's lock,
--     and decides again. No claim ever waits for a fence row while holding
--     a marker.
--  2. It reads the clock once the locks are held, so the claims of a job
--     see times that follow each other, and decides the whole batch at that
--     one instant, unless it has to wait for a marker's lock (step 5).
--  3. It begins the generation of every job it claims (not skips) that has
--     none, or a restored one, at that instant (enroll). A generation row
--     this cluster wrote is read without a lock: nobody rewrites one.
--  4. It decides together, in one statement that reads the batch's markers,
--     every request whose answer needs no lock on a marker: the first
--     claim of a slot nobody holds (overlap allow, a slot its job's
--     generation covers, NotBefore passed, NotAfter not passed) is inserted
--     there, and so is every answer that changes nothing (held, finished,
--     retry not yet due, not yet due, absent). Every request of a job with
--     a request left over goes to step 5, so each job's fences follow
--     request order.
--  5. The rest (takeovers, released slots, due retries, abandonments,
--     overlap forbid, replace or queue, data loss, late first claims, skips
--     that write, backfills of skipped slots, a slot twice in the batch) it
--     decides one by one: it locks the slot's marker row (SELECT ... FOR
--     UPDATE: under READ COMMITTED it waits for a fenced mutation, a prune
--     or a job's transaction after CompleteTx in progress and reads the row
--     that one left), decides on it, and writes; after such a wait it reads
--     the clock again. A first marker of a slot its job's generation does
--     not cover is recorded skipped for data loss, unless the claim is a
--     term's.
--     A first marker that a claim would create, past its NotBefore, once
--     the clock has passed its NotAfter (the end of the slot's starting
--     window) is recorded skipped with slotstore.ReasonLate, 'missed:
--     late', whatever else of the job runs: a replica whose clock runs
--     behind never starts a slot late by this clock. NotAfter binds first
--     markers alone: not takeovers, claims of released or retrying slots,
--     nor a backfill's win of a skipped slot.
--     Forbid skips a slot while another of the job runs under a live lease;
--     queue then writes nothing and answers queued, and also while one runs
--     under an expired lease that a takeover may still win (on_crash retry,
--     attempts left, claimed since the generation began or a term's): its
--     row has the job, the slot, state 'queued' and, as lease_end, the
--     least lease end of those slots, now for an expired one; replace
--     supersedes them all in one UPDATE.
--  6. Each job's winners take, in request order, the fences after the
--     larger of the job's last fence and the clock in microseconds; the
--     fence rows are raised at the end, in the same transaction.
--
-- A request naming a spec (p_spec) that is not its job's spec in force
-- (the catalog table) is superseded: it begins no generation, reads, locks
-- and writes no marker, takes no fence, and its row says superseded. The
-- catalog rows of the jobs named with a spec are read once the fence rows
-- are held, before the clock (step 2), FOR SHARE in job order:
-- enroll locks them, to change them, before the generation rows, so an
-- enrolment that puts another spec in force and the claims of its job take
-- turns. A batch naming no spec (p_spec null) reads no catalog row.
--
-- A generation covers the slots from v_lead (slotstore.ClaimLead) after
-- it began (slotstore.Generation.Covers): a replica claims a slot from
-- ClaimLead before it (its NotBefore), so the marker of a slot less than
-- ClaimLead after born may have been created, and lost, before the
-- generation began. Every comparison of a slot with born is therefore
-- with born + v_lead; those of a marker's claimed_at with born (a marker,
-- or a skip, recorded before the generation began) are not. Replicas of
-- earlier builds, which claim no slot ahead, get the same rule: it only
-- skips for data loss a few more of their slots just after a loss.
--
-- A backfill (p_backfill) wins a slot its job's generation covers recorded
-- skipped, for any reason but data loss, as a first claim wins a slot
-- (attempt 1, a new fence, nothing of the skip left); with forbid, not
-- while another slot of the job runs under a live lease; before its
-- NotBefore it changes nothing. A backfill made once the clock has reached
-- its keep_until is a takeover-only claim.
--
-- Replicas of earlier builds call this function by name (those of the
-- builds of versions 3 to 6, from before backfills, 8 and 9, from before
-- specs, and 10 to 12, from before NotAfter, through claim_compat.sql):
-- a new text takes effect for them too from the commit that applies it,
-- and a claim that began before
-- runs the old text to its end. Every text must therefore lock as the one
-- before did: fence rows of the batch's jobs first, in job order, then
-- catalog rows and generation rows, then markers (functions.go, Functions).
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
    p_overlap       text[],        -- allow | forbid | replace | queue
    p_term          boolean[],     -- a standing lease (a duty's term): no generation check
    p_manual        boolean[],
    p_skipping      boolean[],     -- a skip request, not a claim
    p_reason        text[],        -- a skip's reason; a replace claim's reason for what it replaces
    p_not_before    timestamptz[], -- a skip's or a claim's NotBefore; null for none
    p_data_loss     text,          -- the reason of a slot skipped as one its job's generation does not cover
    p_backfill      boolean[],     -- a claim that may win a slot recorded skipped, before its keep_until
    p_spec          text[],        -- the fingerprint of the spec each request is made under, '' for none; null for none at all
    p_not_after     timestamptz[]  -- a claim's NotAfter; null for none (a skip's, and every one where the array is null)
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
    -- slotstore.ClaimLead: a generation covers the slots from born + v_lead.
    -- The same in every build (TestClaimLeadPinned).
    v_lead   CONSTANT interval := interval '1 second';
    v_cur    {schema}.markers;
    v_found  boolean;
    v_dec    text;
    v_j      integer;
    v_fence  bigint;
    i        integer;
    v_res    {schema}.claim_result;
    v_sysid  bigint;
    v_new    text[];                   -- the claimed jobs with no generation row of this cluster's
    v_out    {schema}.claim_result[];  -- the answers decided together
    v_slow   integer[];                -- the requests left to decide one by one
    v_wins   integer;                  -- how many the set-based statement wins, or would
    v_first  text;                     -- the batch's first job in lock order
    v_write  boolean := true;          -- decide and write, holding every fence row
    v_bf     boolean;                  -- a backfill before its retention ends
    v_only   boolean;                  -- takeover-only, as asked or for a backfill past its retention
    v_cjobs  text[];                   -- the jobs named with a spec that have a spec in force
    v_cfps   text[];                   -- the fingerprint in force of each of v_cjobs
    v_sup    boolean[];                -- each request names a spec that is not in force: superseded
    v_wait   timestamptz;              -- a queued claim's: the least lease end of the running slots it waits for
BEGIN
    -- Each statement below must see what committed before it started.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'slotcron claim needs isolation level read committed, not %',
            current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
    END IF;

    -- A replica racing others for the same fresh slots finds the first
    -- fence row of the batch locked by the claim that is winning them. It
    -- then waits for that claim to end holding only that row, and looks:
    -- when every request is decided without a write (the slots are held
    -- now), it answers at once, never locking the other fence rows. A look
    -- locks no marker: a write that follows takes the fence rows holding
    -- none.
    v_first := (SELECT min(u.job COLLATE "C") FROM unnest(p_job) AS u(job));
    BEGIN
        PERFORM FROM {schema}.fences f WHERE f.job = v_first FOR UPDATE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        PERFORM FROM {schema}.fences f WHERE f.job = v_first FOR UPDATE;
        v_write := false;
    END;

    LOOP
        IF v_write THEN
            INSERT INTO {schema}.fences AS f (job, fence)
            SELECT DISTINCT u.job COLLATE "C", 0 FROM unnest(p_job) AS u(job) ORDER BY 1
            ON CONFLICT (job) DO UPDATE SET fence = f.fence WHERE false; -- locks, writes nothing
            SELECT array_agg(f.job ORDER BY f.job), array_agg(f.fence ORDER BY f.job) INTO v_jobs, v_last
            FROM {schema}.fences f WHERE f.job = ANY (p_job);
        END IF;

        -- Specs. A request naming a spec that is not its job's spec in force
        -- is superseded: it changes nothing, begins no generation and takes
        -- no fence. When writing, the catalog rows are read FOR SHARE, in
        -- job order, after the fence rows and before the clock and the
        -- generations, as enroll locks them (catalog, then generations): an
        -- enrolment that changes the spec in force waits for the claims
        -- deciding under the old one, and the claims that follow it read
        -- the new one; each claim's clock falls within the time its spec was
        -- in force. A look locks none. A batch naming no spec reads nothing.
        v_sup := NULL;
        IF p_spec IS NOT NULL AND EXISTS (SELECT FROM unnest(p_spec) AS s(spec) WHERE s.spec <> '') THEN
            IF v_write THEN
                SELECT array_agg(c.job), array_agg(c.fingerprint) INTO v_cjobs, v_cfps FROM (
                    SELECT c.job, c.fingerprint FROM {schema}.catalog c
                    WHERE c.job = ANY (SELECT u.job FROM unnest(p_job, p_spec) AS u(job, spec) WHERE u.spec <> '')
                    ORDER BY c.job FOR SHARE
                ) c;
            ELSE
                SELECT array_agg(c.job), array_agg(c.fingerprint) INTO v_cjobs, v_cfps FROM {schema}.catalog c
                WHERE c.job = ANY (SELECT u.job FROM unnest(p_job, p_spec) AS u(job, spec) WHERE u.spec <> '');
            END IF;
            v_sup := ARRAY(
                SELECT coalesce(u.spec <> '' AND f.fp <> u.spec, false)
                FROM unnest(p_job, p_spec) WITH ORDINALITY AS u(job, spec, n)
                LEFT JOIN unnest(v_cjobs, v_cfps) AS f(job, fp) ON f.job = u.job
                ORDER BY u.n);
        END IF;

        v_now := clock_timestamp();
        v_floor := (extract(epoch FROM v_now) * 1000000)::bigint;

        -- Generations. A row this cluster's own enroll or claim wrote is
        -- never rewritten, so it is read without a lock; the other jobs are
        -- enrolled (only with the fence rows held), which inserts or begins
        -- anew their rows, locking them in job order.
        SELECT array_agg(DISTINCT u.job) INTO v_claims
        FROM unnest(p_job, p_skipping) WITH ORDINALITY AS u(job, skipping, n)
        WHERE NOT u.skipping AND NOT coalesce(v_sup[u.n], false);
        v_gjobs := NULL;
        v_born := NULL;
        IF v_claims IS NOT NULL THEN
            v_sysid := (SELECT c.system_identifier FROM pg_control_system() c);
            SELECT array_agg(g.job), array_agg(g.born) INTO v_gjobs, v_born
            FROM {schema}.generations g
            WHERE g.job = ANY (v_claims) AND g.sysid = v_sysid AND (g.xid & 4294967295) = g.xmin::text::bigint;
            v_new := ARRAY(SELECT unnest(v_claims) EXCEPT SELECT unnest(v_gjobs));
            IF cardinality(v_new) > 0 AND v_write THEN
                SELECT coalesce(v_gjobs, '{}') || array_agg(g.job), coalesce(v_born, '{}') || array_agg(g.born)
                INTO v_gjobs, v_born
                FROM {schema}.enroll(v_new, v_now) g;
            END IF;
        END IF;

        -- Decide together, on one read of the batch's markers, every request
        -- whose answer needs no lock on a marker (a backfill of a skipped
        -- slot, not for data loss, is slow):
        --   win   no marker, a claim (not takeover-only) with overlap allow, of
        --         a slot the generation covers (or a term), NotBefore
        --         passed, NotAfter not passed: the slot's first marker is
        --         inserted here;
        --   lose  a marker that stays as it is: final, running under a live
        --         lease, retrying before its retry is due, or any for a skip;
        --   none  no marker and none made: takeover-only (absent), or before
        --         NotBefore (not yet);
        --   slow  the rest (a first claim past its NotAfter among them, which
        --         records the slot missed: late), and every request of a job
        --         that has one of those or names a slot twice: decided one by
        --         one below.
        -- A marker of these jobs can appear only under their fence rows, which
        -- this transaction holds, so "no marker" stays true until the insert.
        -- A lose answer is the marker as committed when the statement began,
        -- after the clock was read: the claim takes effect then, before a
        -- mutation still in progress.
        -- A backfill at or past its keep_until is takeover-only.
        WITH req AS (
            SELECT u.ord::integer AS ord, u.job, u.slot, u.lease_us, u.keep_until,
                u.takeover_only OR (u.backfill AND v_now >= u.keep_until) AS takeover_only, u.overlap,
                u.term, u.manual, u.skipping, u.not_before, u.backfill AND v_now < u.keep_until AS backfill, g.born,
                coalesce(v_sup[u.ord], false) AS sup, p_not_after[u.ord] AS not_after
            FROM unnest(p_job, p_slot, p_lease_us, p_keep_until, p_takeover_only, p_overlap, p_term, p_manual,
                p_skipping, p_not_before, p_backfill)
                WITH ORDINALITY AS u(job, slot, lease_us, keep_until, takeover_only, overlap, term, manual,
                    skipping, not_before, backfill, ord)
            LEFT JOIN unnest(v_gjobs, v_born) AS g(job, born) ON g.job = u.job
        ),
        cls AS (
            SELECT r.*, m.whole AS cur,
                CASE
                WHEN r.sup THEN 'superseded'
                WHEN m.job IS NULL THEN
                    CASE
                    WHEN r.skipping THEN CASE WHEN v_now < r.not_before THEN 'none' ELSE 'slow' END
                    WHEN r.takeover_only THEN 'none'
                    WHEN r.born IS NULL OR (r.slot < r.born + v_lead AND NOT r.term) THEN 'slow'
                    WHEN v_now < r.not_before THEN 'none'
                    WHEN v_now > r.not_after THEN 'slow' -- late: recorded skipped below
                    WHEN r.overlap IN ('allow', '') THEN 'win'
                    ELSE 'slow' END
                WHEN r.backfill AND m.state = 'skipped' AND m.reason <> p_data_loss THEN 'slow'
                WHEN r.skipping OR m.state IN ('done', 'abandoned', 'skipped', 'replaced')
                    OR (m.state = 'retrying' AND v_now < m.lease_end)
                    OR (m.state = 'running' AND v_now < m.lease_end
                        AND (NOT v_write OR (h.state = 'running' AND h.lease_end = m.lease_end))) THEN 'lose'
                ELSE 'slow' END AS kind,
                count(*) OVER (PARTITION BY r.job, r.slot) AS n
            -- One probe of markers_by_job a request (LIMIT 1 keeps the
            -- planner from scanning the table). When writing, a running
            -- marker is answered held only once locked, as the loop would:
            -- one that a fenced mutation or a job's transaction after
            -- CompleteTx holds is left to the loop, which waits for it. A
            -- look locks no marker (it holds a fence row it may still have
            -- to take others after): a running marker under a live lease is
            -- answered held as committed.
            FROM req r
            LEFT JOIN LATERAL (
                SELECT mm.*, mm AS whole FROM {schema}.markers mm
                WHERE mm.job = r.job AND mm.slot = r.slot AND NOT r.sup LIMIT 1
            ) m ON true
            LEFT JOIN LATERAL (
                SELECT mm.state, mm.lease_end FROM {schema}.markers mm
                WHERE mm.job = r.job AND mm.slot = r.slot AND mm.state = 'running' AND m.state = 'running'
                    AND NOT r.skipping AND NOT r.sup AND v_write
                FOR UPDATE OF mm SKIP LOCKED
            ) h ON true
        ),
        dec AS (
            SELECT c.*, CASE WHEN bool_and(c.kind <> 'slow' AND c.n = 1) OVER (PARTITION BY c.job)
                THEN c.kind ELSE 'slow' END AS d
            FROM cls c
        ),
        win AS (
            SELECT d.ord, d.job, d.slot, d.lease_us, d.keep_until, d.manual, d.backfill,
                greatest(l.fence, v_floor) + row_number() OVER (PARTITION BY d.job ORDER BY d.ord) AS fence
            FROM dec d JOIN unnest(v_jobs, v_last) AS l(job, fence) ON l.job = d.job
            WHERE d.d = 'win' AND v_write
        ),
        ins AS (
            INSERT INTO {schema}.markers AS m (job, slot, state, holder, fence, attempt, claimed_at, lease_end,
                keep_until, manual, incarnation, backfill)
            SELECT w.job, w.slot, 'running', p_replica, w.fence, 1, v_now,
                v_now + w.lease_us * interval '1 microsecond', w.keep_until, w.manual, p_incarnation, w.backfill
            FROM win w ORDER BY w.job, w.slot
            RETURNING m
        ),
        raised AS (
            UPDATE {schema}.fences AS f SET fence = x.fence
            FROM (SELECT w.job, max(w.fence) AS fence FROM win w GROUP BY w.job) x
            WHERE f.job = x.job AND f.fence < x.fence
        ),
        o AS (
            SELECT d.ord, d.d, CASE WHEN d.d = 'win' THEN i.m ELSE d.cur END AS x
            FROM dec d LEFT JOIN ins i ON d.d = 'win' AND (i.m).job = d.job AND (i.m).slot = d.slot
        )
        SELECT
            array_agg(ROW(o.ord, o.d = 'win', '', false,
                coalesce((o.x).job, ''), coalesce((o.x).slot, '0001-01-01 00:00:00+00'), coalesce((o.x).state, ''),
                coalesce((o.x).holder, ''), coalesce((o.x).fence, 0), coalesce((o.x).attempt, 0),
                coalesce((o.x).claimed_at, '0001-01-01 00:00:00+00'), coalesce((o.x).lease_end, '0001-01-01 00:00:00+00'),
                coalesce((o.x).keep_until, '0001-01-01 00:00:00+00'), (o.x).finished_at, coalesce((o.x).outcome, ''),
                coalesce((o.x).error, ''), coalesce((o.x).duration_ns, 0), coalesce((o.x).reason, ''),
                coalesce((o.x).manual, false), NULL, NULL, v_now, coalesce((o.x).incarnation, ''),
                coalesce((o.x).backfill, false), o.d = 'superseded')::{schema}.claim_result
                ORDER BY o.ord) FILTER (WHERE o.d <> 'slow'),
            array_agg(o.ord ORDER BY o.ord) FILTER (WHERE o.d = 'slow'),
            count(*) FILTER (WHERE o.d = 'win')
        INTO v_out, v_slow, v_wins
        FROM o;

        EXIT WHEN v_write OR (v_slow IS NULL AND v_wins = 0);
        v_write := true; -- something to write after all: take the fence rows
    END LOOP;
    RETURN QUERY SELECT * FROM unnest(v_out);

    FOREACH i IN ARRAY coalesce(v_slow, '{}') LOOP
        -- A superseded request reads, locks and writes no marker.
        v_found := false;
        v_dec := 'superseded';
        IF NOT coalesce(v_sup[i], false) THEN
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

            -- Decide. A backfill at or past its keep_until is takeover-only.
            v_dec := 'lose';
            v_bf := p_backfill[i] AND v_now < p_keep_until[i];
            v_only := p_takeover_only[i] OR (p_backfill[i] AND NOT v_bf);
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
                IF v_only THEN
                    NULL; -- absent
                ELSIF p_slot[i] < v_b + v_lead AND NOT p_term[i] THEN
                    -- A slot the generation does not cover.
                    v_dec := 'data loss';
                ELSIF v_now < p_not_before[i] THEN
                    -- Before its NotBefore by this clock (a replica whose clock
                    -- runs ahead): no first marker yet.
                    v_dec := 'not yet';
                ELSIF v_now > p_not_after[i] THEN
                    -- After its NotAfter by this clock (a replica whose clock
                    -- runs behind): the slot is recorded missed, whatever
                    -- else of the job runs (slotstore.ReasonLate).
                    v_dec := 'late';
                ELSE
                    v_dec := 'win';
                    IF p_overlap[i] = 'forbid' AND EXISTS (
                        SELECT 1 FROM {schema}.markers m
                        WHERE m.job = p_job[i] AND m.state = 'running' AND m.slot <> p_slot[i] AND m.lease_end > v_now
                    ) THEN
                        v_dec := 'overlap';
                    ELSIF p_overlap[i] = 'queue' THEN
                        -- Waits for the job's running slots: no marker, no
                        -- fence; the slots won earlier in the batch count,
                        -- and so does one whose lease expired while a
                        -- takeover may still win it (slotstore.Decide), as
                        -- ending now (rules.QueueWait).
                        v_wait := (SELECT min(greatest(m.lease_end, v_now)) FROM {schema}.markers m
                            WHERE m.job = p_job[i] AND m.state = 'running' AND m.slot <> p_slot[i]
                                AND (m.lease_end > v_now OR (NOT p_crash_skip[i]
                                    AND NOT (p_max_attempts[i] > 0 AND m.attempt >= p_max_attempts[i])
                                    AND (p_term[i] OR m.claimed_at >= v_b))));
                        IF v_wait IS NOT NULL THEN
                            v_dec := 'queue';
                        END IF;
                    END IF;
                END IF;
            ELSIF v_cur.state = 'skipped' THEN
                -- A backfill wins a slot that never ran as a first claim would:
                -- not one skipped for data loss, nor one the generation does
                -- not cover, which may have run before the loss, nor one whose
                -- skip came back from before the generation began (a restored
                -- backup: it may have been backfilled since), nor, with forbid,
                -- while another slot runs under a live lease. Before its
                -- NotBefore it waits (not yet), the marker as it is.
                IF v_bf AND v_cur.reason <> p_data_loss THEN
                    IF v_now < p_not_before[i] THEN
                        v_dec := 'not yet';
                    ELSIF v_cur.claimed_at >= v_b AND p_slot[i] >= v_b + v_lead AND NOT (p_overlap[i] = 'forbid' AND EXISTS (
                        SELECT 1 FROM {schema}.markers m
                        WHERE m.job = p_job[i] AND m.state = 'running' AND m.slot <> p_slot[i] AND m.lease_end > v_now
                    )) THEN
                        v_dec := 'backfill';
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
        END IF;

        -- Apply.
        v_res := NULL;
        v_res.ord := i;
        v_res.won := v_dec IN ('win', 'backfill');
        v_res.prev_holder := '';
        v_res.retry := false;
        v_res.now := v_now;
        v_res.superseded := v_dec = 'superseded';
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
                    keep_until, manual, incarnation, backfill)
                VALUES (p_job[i], p_slot[i], 'running', p_replica, v_fence, 1, v_now,
                    v_now + p_lease_us[i] * interval '1 microsecond', p_keep_until[i], p_manual[i], p_incarnation, v_bf)
                RETURNING m.* INTO v_cur;
            END IF;
        ELSIF v_dec = 'backfill' THEN
            -- As a first claim: attempt 1, nothing of the skip left.
            v_j := array_position(v_jobs, p_job[i]);
            v_fence := greatest(v_last[v_j], v_floor) + 1;
            v_last[v_j] := v_fence;
            UPDATE {schema}.markers m
            SET state = 'running', holder = p_replica, fence = v_fence, attempt = 1, claimed_at = v_now,
                lease_end = v_now + p_lease_us[i] * interval '1 microsecond', keep_until = p_keep_until[i],
                finished_at = NULL, outcome = '', error = '', duration_ns = 0, reason = '', manual = false,
                incarnation = p_incarnation, backfill = true
            WHERE m.job = p_job[i] AND m.slot = p_slot[i]
            RETURNING m.* INTO v_cur;
        ELSIF v_dec IN ('abandon', 'abandon loss') THEN
            UPDATE {schema}.markers m
            SET state = 'abandoned', finished_at = v_now,
                reason = CASE WHEN v_dec = 'abandon loss' THEN p_data_loss
                              WHEN p_crash_skip[i] THEN 'on_crash skip' ELSE 'max attempts' END
            WHERE m.job = p_job[i] AND m.slot = p_slot[i]
            RETURNING m.* INTO v_cur;
        ELSIF v_dec IN ('skip', 'overlap', 'data loss', 'late') THEN
            INSERT INTO {schema}.markers AS m (job, slot, state, holder, fence, attempt, claimed_at, lease_end,
                keep_until, finished_at, reason, manual)
            VALUES (p_job[i], p_slot[i], 'skipped', p_replica, 0, 0, v_now, v_now, p_keep_until[i], v_now,
                CASE v_dec WHEN 'overlap' THEN 'overlap' WHEN 'data loss' THEN p_data_loss
                    WHEN 'late' THEN 'missed: late' ELSE p_reason[i] END,
                p_manual[i] AND NOT p_skipping[i])
            RETURNING m.* INTO v_cur;
        END IF;

        IF v_found OR v_dec NOT IN ('lose', 'not yet', 'superseded', 'queue') THEN
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
            v_res.backfill := v_cur.backfill;
        ELSE
            -- No marker: a takeover-only claim (absent), a skip or a
            -- claim before its time (not yet), a superseded request, or a
            -- queued claim: its job and slot, state 'queued' and, as
            -- lease_end, when the first of the running slots it waits for
            -- may end (now for an expired lease).
            v_res.job := '';
            v_res.slot := '0001-01-01 00:00:00+00';
            v_res.state := '';
            IF v_dec = 'queue' THEN
                v_res.job := p_job[i];
                v_res.slot := p_slot[i];
                v_res.state := 'queued';
            END IF;
            v_res.holder := '';
            v_res.fence := 0;
            v_res.attempt := 0;
            v_res.claimed_at := '0001-01-01 00:00:00+00';
            v_res.lease_end := CASE WHEN v_dec = 'queue' THEN v_wait ELSE '0001-01-01 00:00:00+00' END;
            v_res.keep_until := '0001-01-01 00:00:00+00';
            v_res.outcome := '';
            v_res.error := '';
            v_res.duration_ns := 0;
            v_res.reason := '';
            v_res.manual := false;
            v_res.incarnation := '';
            v_res.backfill := false;
        END IF;
        RETURN NEXT v_res;
    END LOOP;

    UPDATE {schema}.fences AS f SET fence = u.fence
    FROM unnest(v_jobs, v_last) AS u(job, fence)
    WHERE f.job = u.job AND f.fence < u.fence;
END;
$$;

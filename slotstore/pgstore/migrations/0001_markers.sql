-- Markers, per-job fence counters and pauses. {schema} is replaced by the
-- store's quoted schema name.

-- fences holds the last fence issued per job. A claim locks the rows of its
-- jobs, in job order, before it reads any marker, and raises them in the
-- same transaction as the markers they fence.
CREATE TABLE {schema}.fences (
    job   text COLLATE "C" PRIMARY KEY,
    fence bigint NOT NULL CHECK (fence >= 0)
);

-- markers holds one row per slot: the claim history.
CREATE TABLE {schema}.markers (
    job         text COLLATE "C" NOT NULL,
    slot        timestamptz NOT NULL,  -- to the second
    state       text NOT NULL CHECK (state IN ('running', 'done', 'released', 'abandoned',
                                               'skipped', 'replaced', 'retrying')),
    holder      text NOT NULL,         -- replica of the current or last claim, or that skipped the slot
    fence       bigint NOT NULL CHECK (fence > 0 OR (fence = 0 AND state = 'skipped')),
    attempt     integer NOT NULL CHECK (attempt > 0 OR (attempt = 0 AND state = 'skipped')),
    claimed_at  timestamptz NOT NULL,  -- database clock
    lease_end   timestamptz NOT NULL,  -- database clock; when retrying, when the retry is due
    keep_until  timestamptz NOT NULL,  -- slot + retention
    finished_at timestamptz,           -- set once neither running nor released
    outcome     text NOT NULL DEFAULT '' CHECK (outcome IN ('', 'succeeded', 'failed', 'timeout')),
    error       text NOT NULL DEFAULT '',
    duration_ns bigint NOT NULL DEFAULT 0,
    reason      text NOT NULL DEFAULT '',       -- why skipped, replaced or abandoned
    manual      boolean NOT NULL DEFAULT false  -- the slot of a manual trigger
);

-- The key, newest slot first: claims and fenced mutations find a slot by it,
-- and History of one job walks it.
CREATE UNIQUE INDEX markers_by_job ON {schema}.markers (job, slot DESC);
ALTER TABLE {schema}.markers REPLICA IDENTITY USING INDEX markers_by_job;
-- History of every job.
CREATE INDEX markers_by_slot ON {schema}.markers (slot DESC, job);
-- History of the markers in one state: the engine looks for running ones.
CREATE INDEX markers_by_state ON {schema}.markers (state, slot DESC, job);
-- Prune.
CREATE INDEX markers_by_keep_until ON {schema}.markers (keep_until);
-- Overlap policies: the running slots of a job.
CREATE INDEX markers_running ON {schema}.markers (job, slot) WHERE state = 'running';

-- pauses holds what is paused: one row per paused job, and the empty job
-- for the whole cluster.
CREATE TABLE {schema}.pauses (
    job text COLLATE "C" PRIMARY KEY
);

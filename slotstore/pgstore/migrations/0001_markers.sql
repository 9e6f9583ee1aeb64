-- Markers and per-job fence counters. {schema} is replaced by the store's
-- quoted schema name.

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
    state       text NOT NULL CHECK (state IN ('running', 'done', 'released', 'abandoned')),
    holder      text NOT NULL,         -- replica of the current or last claim
    fence       bigint NOT NULL CHECK (fence > 0),
    attempt     integer NOT NULL CHECK (attempt > 0),
    claimed_at  timestamptz NOT NULL,  -- database clock
    lease_end   timestamptz NOT NULL,  -- database clock
    keep_until  timestamptz NOT NULL,  -- slot + retention
    finished_at timestamptz,           -- set once done or abandoned
    outcome     text NOT NULL DEFAULT '' CHECK (outcome IN ('', 'succeeded', 'failed', 'timeout')),
    error       text NOT NULL DEFAULT '',
    duration_ns bigint NOT NULL DEFAULT 0
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

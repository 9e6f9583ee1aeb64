-- The rows of the claim of a batch (functions/claim.sql), which this
-- version added. {schema} is replaced by the store's quoted schema name.

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

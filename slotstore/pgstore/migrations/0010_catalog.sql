-- Version 10 adds the revision of the configuration each replica runs to
-- its beat (replicas.revision), and the job catalog (slotstore.Store.Catalog): one row per
-- job some replica enrolled with a spec, holding the spec in force, its
-- carriers and the specs in force before it. Enroll writes it (the enroll
-- function of seven arguments, functions/enroll.sql) and claims and skips
-- that name a spec read it (functions/claim.sql); the claim's rows gain
-- the mark of a request refused for naming a spec that is not in force.
-- {schema} is replaced by the store's quoted schema name.
CREATE TABLE {schema}.catalog (
    job         text COLLATE "C" PRIMARY KEY,
    fingerprint text NOT NULL,         -- the spec in force
    body        bytea NOT NULL,
    revision    bigint NOT NULL,
    replica     text NOT NULL,         -- whose enrolment put it in force
    since       timestamptz NOT NULL,  -- database clock
    -- {"replica": microseconds since the epoch of its last enrolment}, the
    -- 32 most recent carriers of the spec in force.
    carriers    jsonb NOT NULL,
    -- The specs in force before, newest first, at most 32: objects with
    -- fp, body (base64), rev, replica, since_us and until_us.
    past        jsonb NOT NULL
);

-- ADD ATTRIBUTE changes the type in place, as versions 3 and 9 did.
ALTER TYPE {schema}.claim_result ADD ATTRIBUTE superseded boolean;

-- The revision of the configuration the replica runs (slotstore.Beat);
-- 0 for none, and in the rows of a build before version 10.
ALTER TABLE {schema}.replicas ADD COLUMN revision bigint NOT NULL DEFAULT 0;

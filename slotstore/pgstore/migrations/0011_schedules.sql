-- Version 11 holds schedules as data (slotstore.Store.WriteSchedules): a
-- catalog row a program writes, rather than one replicas enroll. It adds
-- the registered job such a schedule runs (run, '' for a job of the
-- configuration), its version, the sequence number of its last write and
-- whether it is deleted; the indexes that list the live schedules and the
-- changes; and the counter of the sequence numbers. The write_schedules
-- function (functions/schedules.sql) writes them; the enroll function
-- (functions/enroll.sql) leaves a live schedule's row as it is.
-- {schema} is replaced by the store's quoted schema name.
ALTER TABLE {schema}.catalog
    ADD COLUMN run     text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN version bigint NOT NULL DEFAULT 0,
    ADD COLUMN seq     bigint NOT NULL DEFAULT 0,  -- 0: never written as a schedule
    ADD COLUMN deleted boolean NOT NULL DEFAULT false;

-- Schedules: the live schedules by ID, and by the job they run then ID.
-- A prefix is a range of job (job >= prefix AND job < its successor),
-- which the "C" collation of job orders bytewise.
CREATE INDEX catalog_schedules ON {schema}.catalog (job) WHERE run <> '' AND NOT deleted;
CREATE INDEX catalog_schedules_by_run ON {schema}.catalog (run, job) WHERE run <> '' AND NOT deleted;
-- ScheduleChanges: the rows written as schedules, by sequence number.
CREATE UNIQUE INDEX catalog_by_seq ON {schema}.catalog (seq) WHERE seq > 0;

-- The newest sequence number handed out: one row, which a write locks
-- (UPDATE) before its first catalog row and holds until it commits, so
-- sequence numbers are committed in the order they are handed out.
CREATE TABLE {schema}.schedule_head (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq bigint NOT NULL
);
INSERT INTO {schema}.schedule_head (one, seq) VALUES (true, 0);

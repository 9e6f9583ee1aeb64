-- Generations and incarnations. This version also changed the claim
-- (generations, skips that wait for their time) and added enroll and renew
-- (renewals that tell a finished slot from a lost lease), whose texts are
-- in functions/, applied after the migrations; it dropped version 2's
-- claim (functions/claim_compat.sql). {schema} is replaced by the store's
-- quoted schema name.

-- generations holds, per job, when the schema's knowledge of the job began
-- (slotstore.Generation). A claim never creates the first marker of a slot
-- older than born. Rows are never pruned.
--
-- xid and sysid say who wrote the row: the writing transaction's
-- pg_current_xact_id() and the cluster's system identifier. A row written
-- by this cluster's own claim or enroll has an xmin equal to the low 32
-- bits of xid (freezing keeps the raw xmin) and the cluster's sysid; a row
-- that a restore wrote (COPY or INSERT from a dump), in this cluster or
-- another, has not, and the next claim or enroll of the job begins its
-- generation anew.
CREATE TABLE {schema}.generations (
    job   text COLLATE "C" PRIMARY KEY,
    born  timestamptz NOT NULL,  -- database clock
    xid   bigint NOT NULL,       -- pg_current_xact_id() of the writing transaction
    sysid bigint NOT NULL        -- pg_control_system().system_identifier of the writing cluster
);

-- A job the schema already knows (it has a fence) has known it from the
-- start: its generation is born at the epoch, so an upgrade catches up as
-- before. The rows are this cluster's own, written by this transaction.
INSERT INTO {schema}.generations (job, born, xid, sysid)
SELECT f.job, 'epoch', pg_current_xact_id()::text::bigint, (SELECT c.system_identifier FROM pg_control_system() c)
FROM {schema}.fences f;

-- The incarnation of the current or last claim (ClaimParams.Incarnation);
-- '' for skipped slots and markers written before this version.
ALTER TABLE {schema}.markers ADD COLUMN incarnation text NOT NULL DEFAULT '';

-- The claim function's rows gain the marker's incarnation. ADD ATTRIBUTE
-- changes the type in place: nothing that uses it is dropped, and no
-- CASCADE can take anything else with it.
ALTER TYPE {schema}.claim_result ADD ATTRIBUTE incarnation text;

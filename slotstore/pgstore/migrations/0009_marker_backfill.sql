-- Version 9 marks the slots a backfill won (slotstore.Marker.Backfill):
-- false for every marker written before it. The claim function's rows gain
-- the mark; ADD ATTRIBUTE changes the type in place, as version 3 did.
ALTER TABLE {schema}.markers ADD COLUMN backfill boolean NOT NULL DEFAULT false;
ALTER TYPE {schema}.claim_result ADD ATTRIBUTE backfill boolean;

-- Who paused, when and why, and each replica's last beat. {schema} is
-- replaced by the store's quoted schema name.

-- A pause's note (slotstore.PauseNote). A pause recorded before this
-- version, or by a replica of an older build during a rolling upgrade, has
-- none: its paused_at is null. Columns with constant defaults rewrite
-- nothing.
ALTER TABLE {schema}.pauses
    ADD COLUMN paused_by text NOT NULL DEFAULT '',
    ADD COLUMN reason    text NOT NULL DEFAULT '',
    ADD COLUMN paused_at timestamptz;  -- database clock

-- replicas holds each replica's last beat (slotstore.Beat). Beat replaces a
-- replica's row; a row whose keep_until has passed is deleted by the next
-- Beat, Replicas or Prune, and never listed.
CREATE TABLE {schema}.replicas (
    replica     text COLLATE "C" PRIMARY KEY,
    incarnation text NOT NULL,
    version     text NOT NULL,
    started     timestamptz,           -- the replica's clock; null for none
    duties      jsonb NOT NULL,        -- [{"name": ..., "fence": ..., "since": ...}]
    ttl_ns      bigint NOT NULL CHECK (ttl_ns > 0),
    seen        timestamptz NOT NULL,  -- database clock
    keep_until  timestamptz NOT NULL   -- seen + TTL + slotstore.BeatKeep
);

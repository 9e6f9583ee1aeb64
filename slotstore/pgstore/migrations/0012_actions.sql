-- Version 12 holds the actions log (slotstore.Store.AppendAction): one row
-- per entry, never updated. seq is an identity, so INSERT on the table is
-- all an append needs; an append takes the schema's actions advisory lock
-- before it draws seq (actions.go), so entries commit in seq order. The
-- indexes pair each filter of Actions with seq, so a page with a filter
-- walks the entries it lists; actions_by_keep_until serves Prune.
-- {schema} is replaced by the store's quoted schema name.
CREATE TABLE {schema}.actions (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL,             -- database clock
    who        text COLLATE "C" NOT NULL,
    role       text NOT NULL,
    via        text NOT NULL,
    kind       text COLLATE "C" NOT NULL,
    target     text COLLATE "C" NOT NULL,
    reason     text NOT NULL,
    result     text NOT NULL,
    detail     text NOT NULL,
    retain_ns  bigint NOT NULL CHECK (retain_ns > 0),
    keep_until timestamptz NOT NULL              -- at + retain, in whole microseconds
);
CREATE INDEX actions_by_who ON {schema}.actions (who, seq);
CREATE INDEX actions_by_kind ON {schema}.actions (kind, seq);
CREATE INDEX actions_by_target ON {schema}.actions (target, seq);
CREATE INDEX actions_by_keep_until ON {schema}.actions (keep_until);

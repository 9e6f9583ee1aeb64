-- Creates the table of leases in one schema. Run as one implicit
-- transaction, serialised by a transaction-level advisory lock, so that
-- replicas starting together do not trip over each other's CREATE.
-- {schema} is the quoted schema name, {lock} the lock's key.
SELECT pg_advisory_xact_lock({lock});

CREATE SCHEMA IF NOT EXISTS {schema};

-- One row per name: the current or last term. expires_at is computed by
-- the database's clock; pid is the backend of the session that holds the
-- name's advisory lock for the term.
CREATE TABLE IF NOT EXISTS {schema}.leaders (
  name       text PRIMARY KEY,
  fence      bigint NOT NULL,
  holder     text NOT NULL,
  pid        integer NOT NULL,
  expires_at timestamptz NOT NULL
);

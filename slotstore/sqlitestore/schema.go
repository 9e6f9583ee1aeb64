package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations[i] moves the schema from version i to i+1. PRAGMA user_version
// records the version a file is at. Append to the list; never edit an entry
// a released build has applied.
var migrations = []string{
	// 1: markers, per-job fence counters and pauses.
	`CREATE TABLE markers (
		job         TEXT    NOT NULL,
		slot        INTEGER NOT NULL, -- Unix seconds, UTC
		state       TEXT    NOT NULL, -- running | done | released | abandoned | skipped | replaced | retrying
		holder      TEXT    NOT NULL,
		fence       INTEGER NOT NULL, -- 0 for a skipped slot
		attempt     INTEGER NOT NULL, -- 0 for a skipped slot
		claimed_at  INTEGER NOT NULL, -- Unix milliseconds, store clock
		lease_end   INTEGER NOT NULL, -- Unix milliseconds, store clock; the retry's time when retrying
		keep_until  INTEGER NOT NULL, -- Unix milliseconds
		finished_at INTEGER NOT NULL DEFAULT 0, -- Unix milliseconds; 0 while running or released
		outcome     TEXT    NOT NULL DEFAULT '',
		error       TEXT    NOT NULL DEFAULT '',
		duration_ns INTEGER NOT NULL DEFAULT 0,
		reason      TEXT    NOT NULL DEFAULT '', -- why skipped, replaced or abandoned
		manual      INTEGER NOT NULL DEFAULT 0,  -- 1 for a manual trigger's slot
		PRIMARY KEY (job, slot DESC)
	) WITHOUT ROWID;
	CREATE INDEX markers_by_slot ON markers (slot DESC, job);
	CREATE INDEX markers_by_keep_until ON markers (keep_until);
	CREATE INDEX markers_by_state ON markers (state, slot DESC, job);
	CREATE INDEX markers_running ON markers (job, slot) WHERE state = 'running';
	CREATE TABLE fences (
		job   TEXT    NOT NULL PRIMARY KEY,
		fence INTEGER NOT NULL -- the last fence issued for job
	) WITHOUT ROWID;
	CREATE TABLE pauses (
		job TEXT NOT NULL PRIMARY KEY -- a paused job; '' pauses the whole cluster
	) WITHOUT ROWID;`,
	// 2: per-job generations, and the incarnation of a marker's claim. A
	// job the file already knows (it has a fence) has known it from the
	// start: its generation is born at 0.
	`CREATE TABLE generations (
		job  TEXT    NOT NULL PRIMARY KEY,
		born INTEGER NOT NULL -- Unix milliseconds, store clock
	) WITHOUT ROWID;
	INSERT INTO generations (job, born) SELECT job, 0 FROM fences;
	ALTER TABLE markers ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';`,
	// 3: who paused, when and why, and the replicas' last beats. A pause
	// recorded before has no note: its paused_at is NULL.
	`ALTER TABLE pauses ADD COLUMN paused_by TEXT NOT NULL DEFAULT '';
	ALTER TABLE pauses ADD COLUMN reason TEXT NOT NULL DEFAULT '';
	ALTER TABLE pauses ADD COLUMN paused_at INTEGER; -- Unix milliseconds, store clock
	CREATE TABLE beats (
		replica     TEXT    NOT NULL PRIMARY KEY,
		incarnation TEXT    NOT NULL,
		version     TEXT    NOT NULL,
		started     INTEGER NOT NULL, -- Unix milliseconds, the replica's clock; 0 for none
		duties      TEXT    NOT NULL, -- JSON array of {name, fence, since}
		ttl_ns      INTEGER NOT NULL,
		seen        INTEGER NOT NULL, -- Unix milliseconds, store clock
		keep_until  INTEGER NOT NULL  -- Unix milliseconds: seen + TTL + slotstore.BeatKeep
	) WITHOUT ROWID;`,
	// 4: the mark of a slot a backfill won (slotstore.Marker.Backfill).
	`ALTER TABLE markers ADD COLUMN backfill INTEGER NOT NULL DEFAULT 0;`,
	// 5: the job catalog (catalog.go): a row per job enrolled with a spec,
	// and the revision of the configuration each replica runs.
	// The spec in force has columns of its own, so a claim's check reads
	// its fingerprint alone; the carriers and past specs, read only by an
	// enrolment with a spec and by Catalog, are JSON in rules.EntryJSON's
	// shape. A rowid table: a row may hold hundreds of KiB of past specs.
	`CREATE TABLE catalog (
		job         TEXT    NOT NULL PRIMARY KEY,
		fingerprint TEXT    NOT NULL, -- the spec in force
		body        BLOB    NOT NULL,
		revision    INTEGER NOT NULL,
		replica     TEXT    NOT NULL, -- whose enrolment put it in force
		since       INTEGER NOT NULL, -- Unix milliseconds, store clock
		carriers    TEXT    NOT NULL, -- JSON object: replica -> Unix milliseconds of its last enrolment
		past        TEXT    NOT NULL  -- JSON array of rules.SpecJSON, newest first
	);
	ALTER TABLE beats ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;`,
	// 6: schedules held as data (schedules.go): the catalog row of a
	// schedule records the job it runs, its version, the sequence number
	// of its last write and whether it is deleted; the rows of version 5
	// are the configuration's jobs (run '', version and seq 0). The two
	// partial indexes hold the live schedules alone, by run and by ID, so
	// a page of Schedules never reads a configuration's job or a deleted
	// schedule; catalog_by_seq serves ScheduleChanges. schedule_seq is the
	// store-wide counter of schedule writes: one row, absent before the
	// first write.
	`ALTER TABLE catalog ADD COLUMN run TEXT NOT NULL DEFAULT '';
	ALTER TABLE catalog ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE catalog ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE catalog ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0; -- 0 or 1
	CREATE INDEX catalog_by_run ON catalog (run, job) WHERE run <> '' AND deleted = 0;
	CREATE INDEX catalog_schedules ON catalog (job) WHERE run <> '' AND deleted = 0;
	CREATE INDEX catalog_by_seq ON catalog (seq);
	CREATE TABLE schedule_seq (
		id  INTEGER NOT NULL PRIMARY KEY CHECK (id = 0),
		seq INTEGER NOT NULL -- the sequence number of the newest schedule write
	);`,
	// 7: the actions log (actions.go). AUTOINCREMENT, so that a seq is
	// never handed out again after Prune deleted the newest rows. The
	// indexes pair each filter with seq, so a page with a filter walks the
	// entries it lists; actions_by_keep_until serves Prune.
	`CREATE TABLE actions (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		at         INTEGER NOT NULL, -- Unix milliseconds, store clock
		who        TEXT    NOT NULL,
		role       TEXT    NOT NULL,
		via        TEXT    NOT NULL,
		kind       TEXT    NOT NULL,
		target     TEXT    NOT NULL,
		reason     TEXT    NOT NULL,
		result     TEXT    NOT NULL,
		detail     TEXT    NOT NULL,
		retain_ns  INTEGER NOT NULL,
		keep_until INTEGER NOT NULL -- Unix milliseconds: at + retain, whole milliseconds
	);
	CREATE INDEX actions_by_who ON actions (who, seq);
	CREATE INDEX actions_by_kind ON actions (kind, seq);
	CREATE INDEX actions_by_target ON actions (target, seq);
	CREATE INDEX actions_by_keep_until ON actions (keep_until);`,
}

// journalMode connects to the file and reads its journal mode, which the
// connection's pragmas switched to WAL. Two processes opening a new file at
// once both switch it, and the loser's switch can fail busy at once, never
// waiting on the busy timeout: it is tried again, backing off, until that
// timeout has passed.
func (s *Store) journalMode(ctx context.Context, db *sql.DB) (string, error) {
	deadline := time.Now().Add(s.busy)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return mode, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", err
		case <-t.C:
		}
	}
}

// migrate brings the file's schema to the newest version in one
// transaction; a concurrent Open waits for it and then finds nothing to do.
func (s *Store) migrate(ctx context.Context, db *sql.DB) error {
	mode, err := s.journalMode(ctx, db)
	if err != nil {
		return s.fail("open "+s.path, err)
	}
	if mode != "wal" {
		return fmt.Errorf("sqlitestore: open %s: journal mode is %q, want wal (is the file on a network file system?)", s.path, mode)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("open "+s.path+": begin", err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return s.fail("open "+s.path+": read schema version", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("sqlitestore: open %s: schema version %d is newer than this build's %d", s.path, version, len(migrations))
	}
	if version == len(migrations) {
		return nil
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return s.fail(fmt.Sprintf("open %s: migrate to schema version %d", s.path, v+1), err)
		}
	}
	// PRAGMA takes no parameters; the version is a number this code chose.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return s.fail("open "+s.path+": set schema version", err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail("open "+s.path+": commit", err)
	}
	return nil
}

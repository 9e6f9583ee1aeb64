package pgstore

import (
	"context"
	"fmt"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// writeSchedulesSQL calls the schema's write_schedules function
// (functions/schedules.sql): one row a write, its outcome and its entry.
const writeSchedulesSQL = `SELECT c.ord, c.outcome, ` + entryColumns + `
	FROM {schema}.write_schedules($1, $2, $3, $4, $5, $6, $7, $8) c`

// The live schedules (run set, not deleted) after $1 whose IDs are in the
// range [$2, $3), at most $4, in ID order. The condition of the partial
// indexes is repeated so that a generic plan may use them. All walks
// catalog_schedules (job) from the later of $1 and $2 and stops at $3 or
// after $4 rows. ByRun, those that run $5, walks catalog_schedules_by_run
// (run, job) alike: its bounds are on (run, job), which no other index
// can serve, so that no plan walks the IDs of every job and filters them.
// ByIDs probes the primary key for each ID of $5 (and those that run $6,
// unless it is empty).
const (
	schedulesSQL    = `SELECT ` + entryColumns + ` FROM {schema}.catalog c WHERE c.run <> '' AND NOT c.deleted`
	schedulesAllSQL = schedulesSQL + ` AND c.job > $1 AND c.job >= $2 AND c.job < $3
	ORDER BY c.job LIMIT $4`
	schedulesByRunSQL = schedulesSQL + ` AND c.run = $5
	AND (c.run, c.job) > ($5, $1) AND (c.run, c.job) >= ($5, $2) AND (c.run, c.job) < ($5, $3)
	ORDER BY c.run, c.job LIMIT $4`
	schedulesByIDsSQL = schedulesSQL + ` AND c.job > $1 AND c.job >= $2 AND c.job < $3
	AND c.job = ANY ($5::text[]) AND ($6 = '' OR c.run = $6) ORDER BY c.job LIMIT $4`
)

// changesSQL reads the head (schedule_head) and the entries written after
// $1, at most $2, walking catalog_by_seq: one row with null entry columns
// when there are none. One statement, so one snapshot: the head is never
// older than the entries.
const changesSQL = `SELECT h.seq, ` + entryColumns + ` FROM {schema}.schedule_head h
	LEFT JOIN LATERAL (SELECT * FROM {schema}.catalog c WHERE c.seq > $1 AND c.seq > 0 ORDER BY c.seq LIMIT $2) c ON true
	ORDER BY c.seq`

// WriteSchedules implements slotstore.Store: the batch, validated first,
// is one call of the schema's write_schedules function, one round trip and
// one transaction, which applies each write as rules.ApplyWrite does.
func (s *Store) WriteSchedules(ctx context.Context, p slotstore.WriteSchedulesParams) ([]slotstore.ScheduleResult, error) {
	if err := rules.NormalizeWrites(p); err != nil {
		return nil, err
	}
	conn, err := s.conn(ctx, "write schedules")
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	n := len(p.Writes)
	ids, dels, runs, fps, bodies, ifs := make([]string, n), make([]bool, n), make([]string, n), make([]string, n),
		make([][]byte, n), make([]int64, n)
	for i, w := range p.Writes {
		ids[i], dels[i], runs[i], fps[i], bodies[i], ifs[i] = w.ID, w.Delete, w.Run, w.Spec.Fingerprint, w.Spec.Body, w.IfVersion
	}
	rows, err := conn.Query(ctx, s.q.writeSchedules, p.By, ids, dels, runs, fps, bodies, ifs, s.q.channel)
	if err != nil {
		return nil, s.fail("write schedules", err)
	}
	defer rows.Close()
	out := make([]slotstore.ScheduleResult, n)
	got := 0
	for rows.Next() {
		var (
			ord     int32
			outcome string
			x       entryScan
		)
		if err := rows.Scan(append([]any{&ord, &outcome}, x.dest()...)...); err != nil {
			return nil, s.fail("write schedules", err)
		}
		if ord < 1 || int(ord) > n {
			return nil, fmt.Errorf("pgstore: write schedules: a result for write %d of %d", ord, n)
		}
		e, _ := x.entry()
		w := p.Writes[ord-1]
		werr, ok := writeError(outcome, w, e)
		if !ok {
			return nil, fmt.Errorf("pgstore: write schedules: write %s: outcome %q", w.ID, outcome)
		}
		out[ord-1] = slotstore.ScheduleResult{Entry: e, Err: werr}
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("write schedules", err)
	}
	if got != n {
		return nil, fmt.Errorf("pgstore: write schedules: %d results for %d writes", got, n)
	}
	return out, nil
}

// writeError is the result's error for the outcome the write_schedules
// function answered for w, whose entry is now e, as rules.ApplyWrite words
// it; ok is false for an outcome the function never answers.
func writeError(outcome string, w slotstore.ScheduleWrite, e slotstore.CatalogEntry) (err error, ok bool) {
	switch outcome {
	case "changed", "same":
		return nil, true
	case "not_schedule":
		return fmt.Errorf("%w: %s", slotstore.ErrNotSchedule, w.ID), true
	case "no_schedule":
		return fmt.Errorf("%w: %s", slotstore.ErrNoSchedule, w.ID), true
	case "version_mismatch":
		v := e.Version
		if e.Run == "" || e.Deleted {
			v = 0
		}
		return fmt.Errorf("%w: %s is at version %d, not %d", slotstore.ErrVersionMismatch, w.ID, v, w.IfVersion), true
	}
	return nil, false
}

// Schedules implements slotstore.Store: one statement, which walks an
// index of the live schedules from the page's start (see schedulesSQL).
func (s *Store) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeSchedules(p)
	if err != nil {
		return nil, err
	}
	lo, hi, ok := prefixRange(p.Prefix)
	if !ok {
		if s.closed.Load() {
			return nil, fmt.Errorf("pgstore: schedules: %w", slotstore.ErrClosed)
		}
		return nil, nil // no schedule's ID begins with it
	}
	switch {
	case len(p.IDs) > 0:
		return s.entries(ctx, "schedules", s.q.schedulesByIDs, p.After, lo, hi, p.Limit, p.IDs, p.Run)
	case p.Run != "":
		return s.entries(ctx, "schedules", s.q.schedulesByRun, p.After, lo, hi, p.Limit, p.Run)
	}
	return s.entries(ctx, "schedules", s.q.schedulesAll, p.After, lo, hi, p.Limit)
}

// prefixRange returns the range [lo, hi) of the IDs that begin with
// prefix, in the bytewise order of the catalog's "C" collation: a
// schedule's ID is printable ASCII (0x21 to 0x7e), so hi is prefix with
// its last byte raised by one, or "\x7f", above every ID, for no prefix.
// ok is false when no ID can begin with prefix (a byte that is not
// printable ASCII).
func prefixRange(prefix string) (lo, hi string, ok bool) {
	if prefix == "" {
		return "", "\x7f", true
	}
	for i := 0; i < len(prefix); i++ {
		if prefix[i] < 0x21 || prefix[i] > 0x7e {
			return "", "", false
		}
	}
	last := len(prefix) - 1
	return prefix, prefix[:last] + string(rune(prefix[last]+1)), true
}

// ScheduleChanges implements slotstore.Store: one statement reads the
// head's one row and the page from catalog_by_seq; with nothing changed,
// one row and one index probe.
func (s *Store) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	p, err := rules.NormalizeChanges(p)
	if err != nil {
		return slotstore.Changes{}, err
	}
	conn, err := s.conn(ctx, "schedule changes")
	if err != nil {
		return slotstore.Changes{}, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.q.changes, p.After, p.Limit)
	if err != nil {
		return slotstore.Changes{}, s.fail("schedule changes", err)
	}
	defer rows.Close()
	var out slotstore.Changes
	for rows.Next() {
		var x entryScan
		if err := rows.Scan(append([]any{&out.Head}, x.dest()...)...); err != nil {
			return slotstore.Changes{}, s.fail("schedule changes", err)
		}
		if e, ok := x.entry(); ok {
			out.Entries = append(out.Entries, e)
		}
	}
	if err := rows.Err(); err != nil {
		return slotstore.Changes{}, s.fail("schedule changes", err)
	}
	return out, nil
}

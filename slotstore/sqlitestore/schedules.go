package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Schedules held as data are catalog rows whose run is set (schema version
// 6). A write applies rules.ApplyWrite to the row in its batch's
// transaction, as an enrolment applies rules.Offer; the sequence number of
// a changed row is the next value of the one-row counter schedule_seq,
// taken in the same transaction. SQLite lets one writer at a time hold the
// file, and a writer commits before the next one begins, so sequence
// numbers are taken in the order writes take effect and no write commits
// below a number a reader has already seen.
const (
	// nextSeq takes the store's next sequence number.
	nextSeq = `INSERT INTO schedule_seq (id, seq) VALUES (0, 1)
		ON CONFLICT (id) DO UPDATE SET seq = seq + 1 RETURNING seq`
	// selectHead reads the newest sequence number: one row, no row before
	// the first write.
	selectHead = `SELECT seq FROM schedule_seq WHERE id = 0`
	// changesPage walks catalog_by_seq from the reader's cursor to the
	// head read before it.
	changesPage = `SELECT ` + catalogColumns + ` FROM catalog INDEXED BY catalog_by_seq
		WHERE seq > ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3`
	// live is the WHERE clause of the partial indexes catalog_by_run and
	// catalog_schedules: a query that names both terms may use them.
	live = `run <> '' AND deleted = 0`
)

// WriteSchedules implements slotstore.Store. The whole batch is one BEGIN
// IMMEDIATE transaction, as a claim batch is: each write reads its row,
// applies rules.ApplyWrite and, when the row changes, takes the next
// sequence number, writes the row back and begins the job's generation if
// it has none, as Enroll does. A write sees the rows the writes before it
// in the batch wrote.
func (s *Store) WriteSchedules(ctx context.Context, p slotstore.WriteSchedulesParams) ([]slotstore.ScheduleResult, error) {
	if err := rules.NormalizeWrites(p); err != nil {
		return nil, err
	}
	var out []slotstore.ScheduleResult
	_, err := s.batch(ctx, "write schedules", len(p.Writes), func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		out = make([]slotstore.ScheduleResult, len(p.Writes))
		for i, w := range p.Writes {
			res, err := st.writeSchedule(ctx, w, p.By, now)
			if err != nil {
				return nil, err
			}
			out[i] = res
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeSchedule applies write w by by at now to its catalog row.
func (st *stmts) writeSchedule(ctx context.Context, w slotstore.ScheduleWrite, by string, now time.Time) (slotstore.ScheduleResult, error) {
	cur, err := st.entryOf(ctx, w.ID)
	if err != nil {
		return slotstore.ScheduleResult{}, err
	}
	e, out, werr := rules.ApplyWrite(cur, w, by, now)
	if out != rules.Changed {
		return slotstore.ScheduleResult{Entry: e, Err: werr}, nil
	}
	next, err := st.prepared(ctx, &st.seq, nextSeq)
	if err != nil {
		return slotstore.ScheduleResult{}, err
	}
	if err := next.QueryRowContext(ctx).Scan(&e.Seq); err != nil {
		return slotstore.ScheduleResult{}, fmt.Errorf("take the sequence number of schedule %s: %w", w.ID, err)
	}
	if err := st.putEntryOf(ctx, e); err != nil {
		return slotstore.ScheduleResult{}, err
	}
	if _, err := st.bornOf(ctx, w.ID, now); err != nil {
		return slotstore.ScheduleResult{}, fmt.Errorf("begin the generation of schedule %s: %w", w.ID, err)
	}
	return slotstore.ScheduleResult{Entry: e}, nil
}

// Schedules implements slotstore.Store. It reads without taking the write
// lock, as Catalog does, in one SELECT that walks a partial index of the
// live schedules: catalog_by_run (run, job) with a Run, catalog_schedules
// (job) without; with IDs, the primary key. A prefix is a range of the
// index, so a page reads only the rows it returns.
func (s *Store) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeSchedules(p)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("sqlitestore: schedules: %w", slotstore.ErrClosed)
	}
	db, done, err := s.read(ctx, "schedules")
	if err != nil {
		return nil, err
	}
	defer done()
	q, args := schedulesQuery(p)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.fail("schedules", err)
	}
	out, err := scanEntries(rows)
	if err != nil {
		return nil, s.fail("schedules", err)
	}
	return out, nil
}

// schedulesQuery returns the SELECT of the page p asks for and its
// arguments. Every condition on job bounds the index's range: the lower
// bound is the greater of After (excluded) and Prefix (included), the
// upper one the first string past every string with the prefix.
func schedulesQuery(p slotstore.ScheduleParams) (string, []any) {
	var q strings.Builder
	q.WriteString(`SELECT ` + catalogColumns + ` FROM catalog `)
	switch {
	case len(p.IDs) > 0:
	case p.Run != "":
		q.WriteString(`INDEXED BY catalog_by_run `)
	default:
		q.WriteString(`INDEXED BY catalog_schedules `)
	}
	q.WriteString(`WHERE ` + live)
	var args []any
	if p.Run != "" {
		q.WriteString(` AND run = ?`)
		args = append(args, p.Run)
	}
	if p.After >= p.Prefix {
		q.WriteString(` AND job > ?`)
		args = append(args, p.After)
	} else {
		q.WriteString(` AND job >= ?`)
		args = append(args, p.Prefix)
	}
	if end, ok := prefixEnd(p.Prefix); ok {
		q.WriteString(` AND job < ?`)
		args = append(args, end)
	}
	if len(p.IDs) > 0 {
		ids, _ := json.Marshal(p.IDs) // a []string always marshals
		q.WriteString(` AND job IN (SELECT value FROM json_each(?))`)
		args = append(args, string(ids))
	}
	q.WriteString(` ORDER BY job LIMIT ?`)
	return q.String(), append(args, p.Limit)
}

// prefixEnd returns the least string greater than every string that begins
// with prefix, in SQLite's BINARY order (bytes, as Go compares strings);
// false when there is none (an empty prefix, or one of 0xff bytes alone).
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", false
	}
	b[len(b)-1]++
	return string(b), true
}

// ScheduleChanges implements slotstore.Store. It reads without taking the
// write lock: first the head, one row of schedule_seq, and then, only when
// the head is past p.After, the rows of catalog_by_seq between them. The
// head read first bounds the page, so a write that commits between the two
// reads is left to the next call rather than skipped by a cursor moved to
// a head read after it.
func (s *Store) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	p, err := rules.NormalizeChanges(p)
	if err != nil {
		return slotstore.Changes{}, err
	}
	if s.closed.Load() {
		return slotstore.Changes{}, fmt.Errorf("sqlitestore: schedule changes: %w", slotstore.ErrClosed)
	}
	db, done, err := s.read(ctx, "schedule changes")
	if err != nil {
		return slotstore.Changes{}, err
	}
	defer done()
	out := slotstore.Changes{Entries: []slotstore.CatalogEntry{}}
	if err := db.QueryRowContext(ctx, selectHead).Scan(&out.Head); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return slotstore.Changes{}, s.fail("schedule changes: read the head", err)
	}
	if out.Head <= p.After {
		return out, nil
	}
	rows, err := db.QueryContext(ctx, changesPage, p.After, out.Head, p.Limit)
	if err != nil {
		return slotstore.Changes{}, s.fail("schedule changes", err)
	}
	if out.Entries, err = scanEntries(rows); err != nil {
		return slotstore.Changes{}, s.fail("schedule changes", err)
	}
	return out, nil
}

// scanEntries reads every row of catalogColumns and closes rows.
func scanEntries(rows *sql.Rows) ([]slotstore.CatalogEntry, error) {
	defer rows.Close()
	out := []slotstore.CatalogEntry{}
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

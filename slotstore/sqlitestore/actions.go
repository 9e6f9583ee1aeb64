package sqlitestore

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// The actions log is the table actions (schema version 7). An append is
// one INSERT in a BEGIN IMMEDIATE transaction, as a claim batch is: the
// clock is read once the write lock is held, and the AUTOINCREMENT key is
// the entry's Seq, so sequence numbers and times follow the order appends
// take the file.
const (
	actionColumns = `seq, at, who, role, via, kind, target, reason, result, detail, retain_ns`
	insertAction  = `INSERT INTO actions (at, who, role, via, kind, target, reason, result, detail, retain_ns, keep_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`
	// pruneActions deletes the entries whose at + retain is before ?1:
	// keep_until holds at + the whole milliseconds of retain, and a
	// fraction left over changes nothing against a clock in milliseconds.
	pruneActions = `DELETE FROM actions WHERE keep_until < ?1`
)

// AppendAction implements slotstore.Store.
func (s *Store) AppendAction(ctx context.Context, a slotstore.Action) (slotstore.Action, error) {
	if err := rules.ValidateAction(a); err != nil {
		return slotstore.Action{}, err
	}
	_, err := s.batch(ctx, "append action", 1, func(st *stmts, now time.Time) ([]slotstore.ClaimResult, error) {
		at := now.UnixMilli()
		err := st.tx.QueryRowContext(ctx, insertAction, at, a.Who, a.Role, a.Via, a.Kind, a.Target, a.Reason, a.Result,
			a.Detail, int64(a.Retain), at+a.Retain.Milliseconds()).Scan(&a.Seq)
		if err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
		a.At = fromMillis(at)
		return nil, nil
	})
	if err != nil {
		return slotstore.Action{}, err
	}
	return a, nil
}

// Actions implements slotstore.Store. It reads without taking the write
// lock, in one SELECT that walks the primary key back from Before, or,
// with a Who, Kind or Target, the index of that column with seq.
func (s *Store) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	p, err := rules.NormalizeActions(p)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("sqlitestore: actions: %w", slotstore.ErrClosed)
	}
	db, done, err := s.read(ctx, "actions")
	if err != nil {
		return nil, err
	}
	defer done()
	q, args := actionsQuery(p)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.fail("actions", err)
	}
	defer rows.Close()
	out := []slotstore.Action{}
	for rows.Next() {
		var (
			a      slotstore.Action
			at, ns int64
		)
		if err := rows.Scan(&a.Seq, &at, &a.Who, &a.Role, &a.Via, &a.Kind, &a.Target, &a.Reason, &a.Result, &a.Detail, &ns); err != nil {
			return nil, s.fail("actions", err)
		}
		a.At, a.Retain = fromMillis(at), time.Duration(ns)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("actions", err)
	}
	return out, nil
}

// actionsQuery returns the SELECT of the page p asks for and its
// arguments.
func actionsQuery(p slotstore.ActionsParams) (string, []any) {
	var q strings.Builder
	q.WriteString(`SELECT ` + actionColumns + ` FROM actions WHERE seq < ?`)
	before := int64(math.MaxInt64)
	if p.Before > 0 {
		before = p.Before
	}
	args := []any{before}
	for _, f := range []struct{ col, value string }{{"who", p.Who}, {"kind", p.Kind}, {"target", p.Target}} {
		if f.value != "" {
			q.WriteString(` AND ` + f.col + ` = ?`)
			args = append(args, f.value)
		}
	}
	if !p.Since.IsZero() {
		// at >= Since, in whole milliseconds: at least Since rounded up.
		since := p.Since.UnixMilli()
		if p.Since.After(time.UnixMilli(since)) {
			since++
		}
		q.WriteString(` AND at >= ?`)
		args = append(args, since)
	}
	q.WriteString(` ORDER BY seq DESC LIMIT ?`)
	return q.String(), append(args, p.Limit)
}

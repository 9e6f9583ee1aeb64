package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// appendActionSQL appends one entry of the actions log in one statement:
// it takes the schema's actions advisory lock $1, held until the statement
// commits, then reads the database's clock (clock_timestamp) and draws seq
// from the identity, so entries commit one at a time in seq order, and At
// follows seq. Without the lock an entry could commit after a later one,
// and a reader paging with Before past the later one would never list it.
// Appends queue on the lock for the time of one INSERT each: the log is
// written at the rate of people and of pauses on failure, not of claims.
// keep_until is At + Retain in whole microseconds: a fraction left over
// changes nothing against a clock in microseconds.
const appendActionSQL = `WITH turn AS MATERIALIZED (SELECT pg_advisory_xact_lock($1::bigint)),
	c AS MATERIALIZED (SELECT clock_timestamp() AS t FROM turn)
	INSERT INTO {schema}.actions (at, who, role, via, kind, target, reason, result, detail, retain_ns, keep_until)
	SELECT c.t, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::bigint,
		c.t + $11::bigint * interval '1 microsecond' FROM c
	RETURNING seq, at`

// actionColumns lists an entry's columns in the order Actions reads them.
const actionColumns = `seq, at, who, role, via, kind, target, reason, result, detail, retain_ns`

// AppendAction implements slotstore.Store: one statement, one round trip.
func (s *Store) AppendAction(ctx context.Context, a slotstore.Action) (slotstore.Action, error) {
	if err := rules.ValidateAction(a); err != nil {
		return slotstore.Action{}, err
	}
	conn, err := s.conn(ctx, "append action")
	if err != nil {
		return slotstore.Action{}, err
	}
	defer conn.Release()
	err = conn.QueryRow(ctx, s.q.appendAction, advisoryKey("actions", s.schema), a.Who, a.Role, a.Via, a.Kind, a.Target,
		a.Reason, a.Result, a.Detail, int64(a.Retain), a.Retain.Microseconds()).Scan(&a.Seq, &a.At)
	if err != nil {
		return slotstore.Action{}, s.fail("append action", err)
	}
	a.At = a.At.UTC()
	return a, nil
}

// Actions implements slotstore.Store: one SELECT, which walks the primary
// key back from Before, or, with a Who, Kind or Target, the index of that
// column with seq. Its text names only the filters set, so each plan is
// made for the filters it has. A page costs O(log n + Limit) when the
// filters the walk does not serve (a second column, Since) pass most
// entries, and up to every entry below Before when they pass few.
func (s *Store) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	p, err := rules.NormalizeActions(p)
	if err != nil {
		return nil, err
	}
	conn, err := s.conn(ctx, "actions")
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	q, args := s.actionsQuery(p)
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, s.readFail("actions", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (slotstore.Action, error) {
		var (
			a  slotstore.Action
			ns int64
		)
		err := r.Scan(&a.Seq, &a.At, &a.Who, &a.Role, &a.Via, &a.Kind, &a.Target, &a.Reason, &a.Result, &a.Detail, &ns)
		a.At, a.Retain = a.At.UTC(), time.Duration(ns)
		return a, err
	})
	if err != nil {
		return nil, s.readFail("actions", err)
	}
	if out == nil {
		out = []slotstore.Action{}
	}
	return out, nil
}

// actionsQuery returns the SELECT of the page p asks for and its
// arguments.
func (s *Store) actionsQuery(p slotstore.ActionsParams) (string, []any) {
	var q strings.Builder
	q.WriteString(`SELECT ` + actionColumns + ` FROM ` + quote(s.schema) + `.actions WHERE true`)
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		q.WriteString(` AND ` + cond + ` $` + strconv.Itoa(len(args)))
	}
	if p.Before > 0 {
		arg("seq <", p.Before)
	}
	for _, f := range []struct{ col, value string }{{"who", p.Who}, {"kind", p.Kind}, {"target", p.Target}} {
		if f.value != "" {
			arg(f.col+" =", f.value)
		}
	}
	if !p.Since.IsZero() {
		// at >= Since, in whole microseconds: at least Since rounded up
		// (pgx would send it truncated).
		since := p.Since.Truncate(time.Microsecond)
		if since.Before(p.Since) {
			since = since.Add(time.Microsecond)
		}
		arg("at >=", since)
	}
	args = append(args, p.Limit)
	fmt.Fprintf(&q, ` ORDER BY seq DESC LIMIT $%d`, len(args))
	return q.String(), args
}

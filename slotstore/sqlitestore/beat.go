package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

const (
	putBeat = `INSERT OR REPLACE INTO beats (replica, incarnation, version, started, duties, ttl_ns, seen, keep_until, revision)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	allBeats  = `SELECT replica, incarnation, version, started, duties, ttl_ns, seen, revision FROM beats ORDER BY replica`
	dropBeats = `DELETE FROM beats WHERE keep_until < ?`
)

// keepUntil is when the beat seen at seen, with ttl, is deleted: its TTL
// and slotstore.BeatKeep after it, to the millisecond after.
func keepUntil(seen time.Time, ttl time.Duration) int64 {
	end := seen.Add(ttl).Add(slotstore.BeatKeep)
	ms := end.UnixMilli()
	if end.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// stale reports whether r, seen at r.Seen, is past its TTL and
// slotstore.BeatKeep at now.
func stale(r slotstore.Replica, now time.Time) bool {
	return now.After(r.Seen.Add(r.TTL).Add(slotstore.BeatKeep))
}

// Beat implements slotstore.Store: in one transaction, it deletes the beats
// past their TTL and slotstore.BeatKeep and replaces the replica's.
func (s *Store) Beat(ctx context.Context, p slotstore.Beat) error {
	if err := rules.ValidateBeat(p); err != nil {
		return err
	}
	js, err := json.Marshal(rules.DutiesJSON(p.Duties))
	if err != nil {
		return fmt.Errorf("sqlitestore: beat of %q: encode duties: %w", p.Replica, err)
	}
	op := fmt.Sprintf("beat of %q", p.Replica)
	done, err := s.begin(ctx, op)
	if err != nil {
		return err
	}
	defer done()
	tx, err := s.conn().BeginTx(ctx, nil)
	if err != nil {
		return s.fail(op, err)
	}
	defer tx.Rollback()
	now := s.clock()
	if _, err := tx.ExecContext(ctx, dropBeats, now.UnixMilli()); err != nil {
		return s.fail(op, err)
	}
	if _, err := tx.ExecContext(ctx, putBeat, p.Replica, p.Incarnation, p.Version, millis(p.Started), string(js),
		int64(p.TTL), now.UnixMilli(), keepUntil(now, p.TTL), p.Revision); err != nil {
		return s.fail(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.failSent(ctx, op, err)
	}
	return nil
}

// Replicas implements slotstore.Store. It reads without taking the write
// lock, and takes it only to delete beats past their TTL and
// slotstore.BeatKeep when it met some.
func (s *Store) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("sqlitestore: replicas: %w", slotstore.ErrClosed)
	}
	out, old, err := s.listBeats(ctx)
	if err != nil || !old {
		return out, err
	}
	done, err := s.begin(ctx, "replicas: delete old beats")
	if err != nil {
		return nil, err
	}
	defer done()
	if _, err := s.conn().ExecContext(ctx, dropBeats, s.clock().UnixMilli()); err != nil {
		return nil, s.fail("replicas: delete old beats", err)
	}
	return out, nil
}

// listBeats returns the beats within their TTL and slotstore.BeatKeep by
// the store's clock, and whether it met others.
func (s *Store) listBeats(ctx context.Context) (out []slotstore.Replica, old bool, err error) {
	db, done, err := s.read(ctx, "replicas")
	if err != nil {
		return nil, false, err
	}
	defer done()
	now := s.clock()
	rows, err := db.QueryContext(ctx, allBeats)
	if err != nil {
		return nil, false, s.fail("replicas", err)
	}
	defer rows.Close()
	out = []slotstore.Replica{}
	for rows.Next() {
		var (
			r                  slotstore.Replica
			started, ttl, seen int64
			duties             string
		)
		if err := rows.Scan(&r.Replica, &r.Incarnation, &r.Version, &started, &duties, &ttl, &seen, &r.Revision); err != nil {
			return nil, false, s.fail("replicas", err)
		}
		r.Started, r.TTL, r.Seen = fromMillis(started), time.Duration(ttl), fromMillis(seen)
		if stale(r, now) {
			old = true
			continue
		}
		var ds []rules.DutyJSON
		if err := json.Unmarshal([]byte(duties), &ds); err != nil {
			return nil, false, fmt.Errorf("sqlitestore: replicas: duties of %q: %w", r.Replica, err)
		}
		r.Duties = rules.Duties(ds)
		r.Live = !now.After(r.Seen.Add(r.TTL))
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.fail("replicas", err)
	}
	return out, old, nil
}

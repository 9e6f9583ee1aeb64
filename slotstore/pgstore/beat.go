package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Beat upserts the replica's row and then deletes the rows past their
// keep_until, in one batch, so one implicit transaction: its deletion skips
// the rows other transactions have locked, so it never waits, and the
// upsert waits for nothing but a deletion of the replica's own row. No two
// Beats, nor a Beat and a Replicas or Prune, can wait for each other in a
// cycle.
const (
	// beatSQL replaces the replica's row at the database's clock. $7 is
	// TTL + slotstore.BeatKeep in microseconds.
	beatSQL = `INSERT INTO {schema}.replicas (replica, incarnation, version, started, duties, ttl_ns, seen, keep_until, revision)
	SELECT $1, $2, $3, $4, $5, $6, c.t, c.t + $7::bigint * interval '1 microsecond', $8
	FROM (SELECT clock_timestamp() AS t) c
	ON CONFLICT (replica) DO UPDATE SET
		incarnation = EXCLUDED.incarnation, version = EXCLUDED.version, started = EXCLUDED.started, revision = EXCLUDED.revision,
		duties = EXCLUDED.duties, ttl_ns = EXCLUDED.ttl_ns, seen = EXCLUDED.seen, keep_until = EXCLUDED.keep_until`
	// dropBeatsSQL deletes the rows past their keep_until that no other
	// transaction has locked.
	dropBeatsSQL = `DELETE FROM {schema}.replicas WHERE replica IN (
		SELECT o.replica FROM {schema}.replicas o WHERE o.keep_until < clock_timestamp() FOR UPDATE SKIP LOCKED)`
	// replicasSQL lists the rows whose keep_until has not passed, with the
	// database's time, and deletes the others as dropBeatsSQL does. The
	// SELECT sees the table as it was before the DELETE, so it leaves those
	// out itself.
	replicasSQL = `WITH c AS (SELECT clock_timestamp() AS t),
	old AS (
		DELETE FROM {schema}.replicas WHERE replica IN (
			SELECT o.replica FROM {schema}.replicas o, c WHERE o.keep_until < c.t FOR UPDATE OF o SKIP LOCKED)
	)
	SELECT r.replica, r.incarnation, r.version, r.started, r.duties, r.ttl_ns, r.seen, c.t, r.revision
	FROM {schema}.replicas r, c WHERE r.keep_until >= c.t ORDER BY r.replica`
)

// keepMicros is how long a beat of ttl is kept, TTL and
// slotstore.BeatKeep, in whole microseconds rounded up; it does not
// overflow for the longest TTL.
func keepMicros(ttl time.Duration) int64 {
	us := int64(ttl / time.Microsecond)
	if ttl%time.Microsecond != 0 {
		us++
	}
	return min(us, math.MaxInt64-slotstore.BeatKeep.Microseconds()) + slotstore.BeatKeep.Microseconds()
}

// Beat implements slotstore.Store in one round trip.
func (s *Store) Beat(ctx context.Context, p slotstore.Beat) error {
	if err := rules.ValidateBeat(p); err != nil {
		return err
	}
	js, err := json.Marshal(rules.DutiesJSON(p.Duties))
	if err != nil {
		return fmt.Errorf("pgstore: beat of %q: encode duties: %w", p.Replica, err)
	}
	var started *time.Time
	if !p.Started.IsZero() {
		started = &p.Started
	}
	op := fmt.Sprintf("beat of %q", p.Replica)
	conn, err := s.conn(ctx, op)
	if err != nil {
		return err
	}
	defer conn.Release()
	batch := &pgx.Batch{}
	batch.Queue(s.q.beat, p.Replica, p.Incarnation, p.Version, started, string(js), int64(p.TTL), keepMicros(p.TTL), p.Revision)
	batch.Queue(s.q.dropBeats)
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Replicas implements slotstore.Store in one statement.
func (s *Store) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	conn, err := s.conn(ctx, "replicas")
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.q.replicas)
	if err != nil {
		return nil, s.readFail("replicas", err)
	}
	defer rows.Close()
	out := []slotstore.Replica{}
	for rows.Next() {
		var (
			r       slotstore.Replica
			started *time.Time
			duties  []byte
			ttl     int64
			now     time.Time
			decoded []rules.DutyJSON
		)
		if err := rows.Scan(&r.Replica, &r.Incarnation, &r.Version, &started, &duties, &ttl, &r.Seen, &now, &r.Revision); err != nil {
			return nil, s.readFail("replicas", err)
		}
		if err := json.Unmarshal(duties, &decoded); err != nil {
			return nil, fmt.Errorf("pgstore: replicas: duties of %q: %w", r.Replica, err)
		}
		r.Duties = rules.Duties(decoded)
		if started != nil {
			r.Started = started.UTC()
		}
		r.TTL, r.Seen = time.Duration(ttl), r.Seen.UTC()
		r.Live = !now.After(r.Seen.Add(r.TTL))
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readFail("replicas", err)
	}
	return out, nil
}

package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/internal/testserver"
)

// effectsSession is a session with only the checker's database, for the
// checks made while a replica is frozen.
func effectsSession(t *testing.T) *session {
	t.Helper()
	pg := testserver.StartPostgres(t)
	pool, err := pgxpool.New(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), effectsSchema); err != nil {
		t.Fatal(err)
	}
	return &session{t: t, effects: pool, o: Options{Lease: 2 * time.Second, Deadline: 5 * time.Second, Logf: t.Logf}}
}

func addRow(t *testing.T, s *session, table string, r runRef) {
	t.Helper()
	slot, err := time.Parse(time.RFC3339, r.slot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.effects.Exec(context.Background(), `INSERT INTO `+table+` (job, slot, fence, attempt, replica) VALUES ($1, $2, $3, 1, 'r1')`,
		r.job, slot, r.fence); err != nil {
		t.Fatal(err)
	}
}

// A replica frozen at its point before effect is taken out only when no
// run it holds has written an effect: one that has is between its effect
// and its finish, where a successor's repeat is legitimate.
func TestTakeoutSparesAPendingEffect(t *testing.T) {
	s := effectsSession(t)
	atPoint := runRef{"tick", "2026-12-10T09:00:20Z", 41}
	other := runRef{"minute", "2026-12-10T09:00:00Z", 12}
	m := &member{name: "r1", up: true, running: map[runRef]time.Time{atPoint: time.Now(), other: time.Now()}}
	held, ok := s.noEffectPending(m)
	if !ok || len(held) != 2 {
		t.Fatalf("no effect written: pending %v, held %v; want none pending, both held", !ok, held)
	}
	// Another attempt's effect is not this run's.
	addRow(t, s, "effect_fenced", runRef{other.job, other.slot, 11})
	if _, ok := s.noEffectPending(m); !ok {
		t.Fatal("an older attempt's effect counts as pending")
	}
	for _, table := range []string{"effect_once", "effect_fenced", "effect_plain"} {
		addRow(t, s, table, other)
		if _, ok := s.noEffectPending(m); ok {
			t.Fatalf("the minute run wrote its effect to %s: not seen as pending", table)
		}
		if _, err := s.effects.Exec(context.Background(), `DELETE FROM `+table+` WHERE fence = 12`); err != nil {
			t.Fatal(err)
		}
	}
}

// A holder frozen before its effect stays frozen until a successor, with
// a higher fence, wrote the slot's effect through the fence check.
func TestTakeoutAwaitsTheSuccessorsEffect(t *testing.T) {
	s := effectsSession(t)
	held := []runRef{{"tick", "2026-12-10T09:00:20Z", 41}}
	m := &member{name: "r1"}
	done := make(chan struct{})
	go func() {
		s.awaitSuccessors(m, held, time.Now())
		close(done)
	}()
	// The holder's own fence, and a once effect, are not the successor's
	// fenced write.
	addRow(t, s, "effect_fenced", runRef{"tick", "2026-12-10T09:00:20Z", 41})
	addRow(t, s, "effect_once", runRef{"tick", "2026-12-10T09:00:20Z", 42})
	addRow(t, s, "effect_fenced", runRef{"tick", "2026-12-10T09:00:21Z", 43})
	select {
	case <-done:
		t.Fatal("resumed before a successor wrote the slot's fenced effect")
	case <-time.After(time.Second):
	}
	addRow(t, s, "effect_fenced", runRef{"tick", "2026-12-10T09:00:20Z", 42})
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting 30 s after the successor wrote its effect")
	}
	if len(s.odd) > 0 {
		t.Fatalf("odd: %q", s.odd)
	}
}

package chaos

import (
	"context"
	"testing"
	"time"
)

// review2Row writes one row of an effects table: a start, an effect, or
// (with style and kind) a refusal.
func review2Row(t *testing.T, s *session, table string, slot time.Time, fence int64, attempt int, replica string, at time.Time, refusal ...string) {
	t.Helper()
	q := `INSERT INTO ` + table + ` (job, slot, fence, attempt, replica, at) VALUES ('tick', $1, $2, $3, $4, $5)`
	args := []any{slot, fence, attempt, replica, at}
	if len(refusal) == 2 {
		q = `INSERT INTO refusals (job, slot, fence, attempt, replica, at, style, kind) VALUES ('tick', $1, $2, $3, $4, $5, $6, $7)`
		args = append(args, refusal[0], refusal[1])
	}
	if _, err := s.effects.Exec(context.Background(), q, args...); err != nil {
		t.Fatal(err)
	}
}

// A store that hands one slot to two replicas at once (both
// attempt 1, fences 41 and 42, neither holder taken out by any fault)
// breaks guarantee 1, and the checker sees it only when the lower fence
// happens to write its effect first: then the stale-only fence accepts
// both writes and the fenced duplicate fails the session. When the higher
// fence writes first, the once-per-slot helper and the fence check both
// refuse the other, the two starts count only as a re-execution, and the
// session passes. Tick work lasts 50-300 ms at random, so either order is
// as likely. The checker never looks at the starts themselves: two starts
// of one attempt, or a start while the previous attempt's lease ran with
// no fault on its holder, must fail a session whatever the order of the
// writes.
func TestTwoLiveHoldersFailWhenTheHigherFenceWritesFirst(t *testing.T) {
	s := effectsSession(t)
	s.o.Store, s.o.Lease = StoreEtcd, 4*time.Second
	slot := time.Date(2026, 12, 10, 9, 0, 20, 0, time.UTC)
	at := slot.Add(100 * time.Millisecond)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	for _, higherFirst := range []bool{false, true} {
		for _, table := range []string{"starts", "effect_once", "effect_fenced", "effect_plain", "refusals"} {
			if _, err := s.effects.Exec(context.Background(), `TRUNCATE `+table); err != nil {
				t.Fatal(err)
			}
		}
		// r1 won attempt 1 with fence 41; the store gave r2 attempt 1
		// too, with fence 42, 20 ms later, while r1 held its lease.
		review2Row(t, s, "starts", slot, 41, 1, "r1", ms(0))
		review2Row(t, s, "starts", slot, 42, 1, "r2", ms(20))
		type holder struct {
			fence   int64
			replica string
		}
		first, second := holder{41, "r1"}, holder{42, "r2"}
		if higherFirst {
			first, second = second, first
		}
		review2Row(t, s, "effect_once", slot, first.fence, 1, first.replica, ms(150))
		review2Row(t, s, "effect_fenced", slot, first.fence, 1, first.replica, ms(151))
		review2Row(t, s, "effect_plain", slot, first.fence, 1, first.replica, ms(152))
		review2Row(t, s, "refusals", slot, second.fence, 1, second.replica, ms(250), "once", "applied")
		if second.fence > first.fence {
			review2Row(t, s, "effect_fenced", slot, second.fence, 1, second.replica, ms(251))
		} else {
			review2Row(t, s, "refusals", slot, second.fence, 1, second.replica, ms(251), "fenced", "stale")
		}
		review2Row(t, s, "effect_plain", slot, second.fence, 1, second.replica, ms(252))

		rep := s.check()
		order := "the lower fence wrote first"
		if higherFirst {
			order = "the higher fence wrote first"
		}
		if fs := rep.Failures(); len(fs) == 0 {
			t.Errorf("two replicas held tick@%s at once (attempt 1, fences 41 and 42), %s: the session passes\n%s",
				slot.Format(time.RFC3339), order, rep)
		} else {
			t.Logf("%s: failures %q", order, fs)
		}
	}
}

// Guarantee 2 is per job: every claim of any slot of a job gets
// a fence above every fence issued earlier for that job. The checker
// compares fences only among the attempts of one slot (fenceOrder), and
// the fence helpers check per run key, so a store that numbers fences per
// slot (every first claim fenced 1) or issues a job's fences out of claim
// order passes every session. Here tick@:20 and tick@:21, claimed a second
// apart by two replicas, both get fence 7.
func TestPerSlotFencesFail(t *testing.T) {
	s := effectsSession(t)
	s.o.Store, s.o.Lease = StoreEtcd, 4*time.Second
	first := time.Date(2026, 12, 10, 9, 0, 20, 0, time.UTC)
	for i, replica := range []string{"r1", "r2"} {
		slot := first.Add(time.Duration(i) * time.Second)
		at := slot.Add(100 * time.Millisecond)
		for _, table := range []string{"starts", "effect_once", "effect_fenced", "effect_plain"} {
			review2Row(t, s, table, slot, 7, 1, replica, at)
		}
	}
	rep := s.check()
	if fs := rep.Failures(); len(fs) == 0 {
		t.Errorf("two slots of tick claimed a second apart, both with fence 7: the session passes\n%s", rep)
	}
}

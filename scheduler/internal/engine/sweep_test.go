package engine

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// TestAuditAndSweep: a job enrolled and then left with no replica running
// it has unaccounted slots in its audit; once a replica that has the job is
// back (it carries the spec in force, and is the live one first by name),
// its sweep records them missed (down), and the audit then accounts for
// every slot.
func TestAuditAndSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 5*time.Second)))
		enrolled := time.Now()
		a := startReplica(t, st, "a", "*/10 * * * * *", 0)
		time.Sleep(15 * time.Second)
		a.shutdown(t)
		down := time.Now()
		time.Sleep(2 * time.Minute)

		audited, err := AuditJob(context.Background(), st, "hello", down.Add(time.Second), down.Add(50*time.Second), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if n := audited.Counts[FateUnaccounted]; n != 5 || len(audited.Slots) != 5 {
			t.Fatalf("while every replica is down: %v of %d slots, want 5 unaccounted", audited.Counts, len(audited.Slots))
		}
		for _, s := range audited.Slots {
			if s.Spec != a.e.jobs().plans[0].spec.Fingerprint {
				t.Errorf("slot %s under spec %q", s.Slot.Format(time.RFC3339), s.Spec)
			}
		}

		b := startReplica(t, st, "b", "*/10 * * * * *", 0)
		time.Sleep(2*sweepEvery + time.Second)
		if g := gaugeValue(b.e.metrics.unaccounted); g != 0 {
			t.Errorf("slotcron_slots_unaccounted in steady state = %v, want 0", g)
		}
		b.shutdown(t)
		audited, err = AuditJob(context.Background(), st, "hello", down.Add(time.Second), down.Add(50*time.Second), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if audited.Counts[string(slotstore.StateSkipped)] != 5 {
			t.Fatalf("after the sweep: %v, want 5 skipped", audited.Counts)
		}
		for _, s := range audited.Slots {
			if s.Marker == nil || s.Marker.Reason != reasonDown || s.Marker.Holder != "b" {
				t.Errorf("slot %s: %+v", s.Slot.Format(time.RFC3339), s.Marker)
			}
		}
		// The slots before the job was first enrolled were never its own:
		// the audit says so, and the sweep records none of them.
		early, err := AuditJob(context.Background(), st, "hello", enrolled.Add(-time.Minute), enrolled, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if early.Counts[FateBeforeRecord] != 6 || len(early.Slots) != 6 {
			t.Errorf("the minute before the job was enrolled: %v, want 6 slots before record", early.Counts)
		}
		if n := counterValue(b.e.metrics.missed.WithLabelValues("hello", "down")); n < 5 {
			t.Errorf("slots_missed_total{reason=down} = %v, want at least 5", n)
		}
	})
}

// However many pages the catalog has, a round of sweeps audits every job
// within sweepSpan once it has read the catalog whole: a fifteenth of the
// jobs a minute for a catalog of one page, all of them on each pass of one
// of fifteen pages or more.
func TestSweepRoundAuditsEveryJobWithinTheSpan(t *testing.T) {
	jobs := make([]string, 300)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("job-%03d", i)
	}
	for _, pages := range []int{1, 2, 4, 7, 15, 40} {
		r := newSweepRound()
		last := map[string]int{} // the sweep that last audited the job
		worst := 0
		base := time.Unix(1_800_000_000, 0)
		for sweep := 0; sweep < 10*int(sweepSpan/sweepEvery)*pages; sweep++ {
			r.next(base.Add(time.Duration(sweep) * sweepEvery))
			page := r.pages % pages
			for i, j := range jobs {
				if i%pages != page || !r.audits(j) {
					continue
				}
				if prev, ok := last[j]; ok && sweep > 2*pages { // once a whole pass told the pages
					worst = max(worst, sweep-prev)
				}
				last[j] = sweep
			}
			r.pages++
			if r.after = "x"; r.pages%pages == 0 {
				r.after = ""
			}
		}
		if len(last) != len(jobs) {
			t.Errorf("%d pages: %d of %d jobs audited", pages, len(last), len(jobs))
		}
		if limit := max(int(sweepSpan/sweepEvery), pages) + pages; worst > limit {
			t.Errorf("%d pages: a job went %d sweeps without an audit, want at most %d", pages, worst, limit)
		}
	}
}

// A pass the clock skipped (a sweep slower than its ticker, a process
// frozen or suspended) makes the next pass audit every job: the share it
// skipped would otherwise wait a round.
func TestSweepRoundAfterASkippedPassAuditsEveryJob(t *testing.T) {
	r := newSweepRound()
	at := time.Unix(1_800_000_000, 0)
	for i, step := range []time.Duration{0, sweepEvery, sweepEvery, 3 * sweepEvery, sweepEvery} {
		at = at.Add(step)
		r.next(at)
		r.pages++ // a catalog of one page
		want := int(sweepSpan / sweepEvery)
		if i == 3 {
			want = 1 // the pass after the skip
		}
		if r.shares != want {
			t.Errorf("pass %d (+%v): %d shares, want %d", i, step, r.shares, want)
		}
	}
}

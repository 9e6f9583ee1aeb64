package etcdstore_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestStateHistoryRoundTrips: the History of every job filtered by a
// state other than running (whose copies it reads) reads the jobs'
// markers many jobs a transaction, not one job a request: the engine's
// scan of retrying markers once a minute, above all.
func TestStateHistoryRoundTrips(t *testing.T) {
	s, rc := countedStore(t, freshPrefix())
	base := nextHour()
	var skips []slotstore.SkipRequest
	for i := range 64 {
		skips = append(skips, slotstore.SkipRequest{Job: fmt.Sprintf("j%03d", i), Slot: base, Reason: "missed"})
	}
	if _, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "r1", Requests: skips}); err != nil {
		t.Fatal(err)
	}
	var got []slotstore.Marker
	n := rc.count(func() {
		var err error
		if got, err = s.History(t.Context(), slotstore.HistoryParams{State: slotstore.StateSkipped, Limit: 1000}); err != nil {
			t.Fatal(err)
		}
	})
	if len(got) != 64 {
		t.Errorf("%d skipped markers, want 64", len(got))
	}
	// The job keys, then the 64 jobs' markers.
	if n != "Range:1 Txn:1" {
		t.Errorf("store-wide skipped markers of 64 jobs: %s, want Range:1 Txn:1", n)
	}
}

// TestStateHistoryRounds: jobs read in rounds, a few markers each a
// round, give what each job's own History gives, merged.
func TestStateHistoryRounds(t *testing.T) {
	s := open(t)
	base := nextHour()
	jobs := make([]string, 130) // enough that a round reads few markers of each
	for i := range jobs {
		jobs[i] = fmt.Sprintf("r%03d", i)
	}
	var skips []slotstore.SkipRequest
	for i := range 40 {
		for j, job := range jobs {
			if (i+j)%7 != 0 {
				skips = append(skips, slotstore.SkipRequest{Job: job, Slot: base.Add(time.Duration(i) * time.Second), Reason: "missed"})
			}
		}
	}
	if _, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: "r1", Requests: skips}); err != nil {
		t.Fatal(err)
	}
	var reqs []slotstore.ClaimRequest
	for j, job := range jobs {
		// A slot of its not skipped.
		reqs = append(reqs, slotstore.ClaimRequest{Job: job, Slot: base.Add(time.Duration((7-j%7)%7) * time.Second), Lease: time.Minute})
	}
	won(t, claim(t, s, "r1", reqs...))
	for _, p := range []slotstore.HistoryParams{
		{State: slotstore.StateSkipped, Limit: 30},
		{State: slotstore.StateSkipped, Limit: 3000, Before: base.Add(35 * time.Second)},
		{State: slotstore.StateSkipped, Limit: 200, Before: base.Add(5 * time.Second)},
	} {
		var want []slotstore.Marker
		for _, job := range jobs {
			q := p
			q.Job = job
			ms, err := s.History(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, ms...)
		}
		slices.SortStableFunc(want, func(a, b slotstore.Marker) int {
			if c := b.Slot.Compare(a.Slot); c != 0 {
				return c
			}
			return strings.Compare(a.Job, b.Job)
		})
		want = want[:min(len(want), p.Limit)]
		got, err := s.History(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		if refsOf(got) != refsOf(want) {
			t.Errorf("%+v: %d markers, want %d:\n%s\nwant\n%s", p, len(got), len(want), refsOf(got), refsOf(want))
		}
	}
}

// refsOf lists ms as job@slot.
func refsOf(ms []slotstore.Marker) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Job+"@"+m.Slot.Format(time.TimeOnly))
	}
	return strings.Join(out, " ")
}

// TestRetryingScanRoundTrips: the engine's scan of every job's retrying
// markers, once a minute on every replica, reads 64 jobs' markers in one
// transaction, where it read them one job a request.
func TestRetryingScanRoundTrips(t *testing.T) {
	s, rc := countedStore(t, freshPrefix())
	base := nextHour()
	var reqs []slotstore.ClaimRequest
	for i := range 64 {
		reqs = append(reqs, slotstore.ClaimRequest{Job: fmt.Sprintf("j%03d", i), Slot: base, Lease: time.Minute})
	}
	res := claim(t, s, "r1", reqs...)
	won(t, res)
	for _, r := range res[:32] { // half of them fail and retry
		if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: r.Claim.Ref, Outcome: slotstore.Failed, Error: "boom",
			RetryAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []slotstore.Marker
	n := rc.count(func() {
		var err error
		if got, err = s.History(t.Context(), slotstore.HistoryParams{State: slotstore.StateRetrying, Limit: 10000}); err != nil {
			t.Fatal(err)
		}
	})
	if len(got) != 32 {
		t.Errorf("%d retrying markers, want 32: %s", len(got), refsOf(got))
	}
	if n != "Range:1 Txn:1" {
		t.Errorf("store-wide retrying markers of 64 jobs: %s, want Range:1 Txn:1", n)
	}
}

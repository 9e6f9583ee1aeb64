package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// slots returns n consecutive slots a minute apart, starting at the first
// whole hour a minute or more away: after the generation of any job of a
// fresh store begins, and soon enough that the default retention keeps
// their markers.
func slots(n int) []time.Time {
	// A job enrolled at 00:59:59.5 has its record cover slots from
	// 01:00:00.5 (slotstore.ClaimLead), not 01:00:00.
	base := time.Now().UTC().Add(time.Minute).Truncate(time.Hour).Add(time.Hour)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = base.Add(time.Duration(i) * time.Minute)
	}
	return out
}

func req(job string, slot time.Time, lease time.Duration) slotstore.ClaimRequest {
	return slotstore.ClaimRequest{Job: job, Slot: slot, Lease: lease}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// claimOne claims one slot for replica and returns its result.
func claimOne(t *testing.T, s slotstore.Store, replica string, r slotstore.ClaimRequest) slotstore.ClaimResult {
	t.Helper()
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: []slotstore.ClaimRequest{r}})
	if err != nil {
		t.Fatalf("claim %s@%s by %s: %v", r.Job, stamp(r.Slot), replica, err)
	}
	if len(res) != 1 {
		t.Fatalf("claim %s@%s by %s: %d results, want 1", r.Job, stamp(r.Slot), replica, len(res))
	}
	return res[0]
}

// wantStatus fails the test unless res has status want.
func wantStatus(t *testing.T, what string, res slotstore.ClaimResult, want slotstore.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("%s: status %v, want %v (marker %+v)", what, res.Status, want, res.Marker)
	}
}

// mustWin claims r for replica, fails the test unless the claim won, and
// checks what a winning result says.
func mustWin(t *testing.T, s slotstore.Store, replica string, r slotstore.ClaimRequest) slotstore.ClaimResult {
	t.Helper()
	res := claimOne(t, s, replica, r)
	wantStatus(t, "claim "+r.Job+"@"+stamp(r.Slot)+" by "+replica, res, slotstore.Won)
	checkWon(t, res, replica, r)
	return res
}

// checkWon checks the fields of a winning result for request r.
func checkWon(t *testing.T, res slotstore.ClaimResult, replica string, r slotstore.ClaimRequest) {
	t.Helper()
	c, m := res.Claim, res.Marker
	slot := r.Slot.UTC().Truncate(time.Second)
	if c.Job != r.Job || !c.Slot.Equal(slot) || c.Fence <= 0 || c.Attempt < 1 {
		t.Errorf("won %s@%s: claim %+v", r.Job, stamp(slot), c)
	}
	if res.Err() != nil {
		t.Errorf("won %s@%s: Err() = %v", r.Job, stamp(slot), res.Err())
	}
	if m.Job != r.Job || !m.Slot.Equal(slot) || m.State != slotstore.StateRunning || m.Holder != replica ||
		m.Fence != c.Fence || m.Attempt != c.Attempt || m.ClaimedAt.IsZero() || !m.LeaseEnd.After(m.ClaimedAt) ||
		m.Reason != "" || !m.FinishedAt.IsZero() || m.Outcome != "" || m.Error != "" || m.Duration != 0 {
		t.Errorf("won %s@%s by %s with %+v: marker %+v", r.Job, stamp(slot), replica, c, m)
	}
	// The answer's time, when the store tells it, is read after every
	// decision of the batch.
	if !res.Answered.IsZero() && res.Answered.Before(m.ClaimedAt) {
		t.Errorf("won %s@%s: answered at %s, before its decision at %s", r.Job, stamp(slot), stamp(res.Answered),
			stamp(m.ClaimedAt))
	}
}

// claimAfterExpiry claims r for replica once the lease holding the slot has
// expired, or its retry is due. A claim made while the slot is still held or
// waiting changes nothing, so it retries after the remaining time the store
// reported, for at most patience.
func claimAfterExpiry(t *testing.T, s slotstore.Store, replica string, r slotstore.ClaimRequest) slotstore.ClaimResult {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		res := claimOne(t, s, replica, r)
		if res.Status != slotstore.Held && res.Status != slotstore.Waiting {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s@%s still held after %v: %+v", r.Job, stamp(r.Slot), patience, res.Marker)
		}
		time.Sleep(min(res.Remaining, patience) + 5*time.Millisecond)
	}
}

// waitPast waits until the lease of m, a running marker the store reported,
// or the retry of a retrying one, has ended by the store's clock. It polls
// a Skip of m's slot, which leaves a slot that has a marker alone and
// answers as a losing claim would, with the time that remains, until none
// does, for at most patience.
func waitPast(t *testing.T, s slotstore.Store, m slotstore.Marker) {
	t.Helper()
	// A NotBefore that never comes keeps the probe from recording a slot
	// that has no marker: it answers NotYet instead. A marker that is gone
	// is one whose retention and lease both ended, deleted by a store that
	// deletes such markers itself (redisstore).
	probe := slotstore.SkipRequest{Job: m.Job, Slot: m.Slot, Reason: "probe", NotBefore: never}
	deadline := time.Now().Add(patience)
	for {
		res := skipOne(t, s, "probe", probe)
		switch {
		case res.Status != slotstore.Held && res.Status != slotstore.Waiting, res.Remaining <= 0:
			return
		case time.Now().After(deadline):
			t.Fatalf("lease of %s@%s still not over after %v: %v remain", m.Job, stamp(m.Slot), patience, res.Remaining)
		}
		time.Sleep(min(res.Remaining, patience) + time.Millisecond)
	}
}

// never is a NotBefore no store's clock reaches during a test.
var never = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// waitStoreTime waits until the store's clock has reached end. It polls a
// Skip with NotBefore end of a slot of job, a job the test uses for
// nothing else, which records nothing and answers NotYet, with the time
// that remains, until the store's clock reaches end, and then records the
// slot skipped: the test's only trace of the wait. It waits for at most
// 3 × patience.
func waitStoreTime(t *testing.T, s slotstore.Store, job string, end time.Time) {
	t.Helper()
	probe := slotstore.SkipRequest{Job: job, Slot: slots(1)[0], Reason: "probe", NotBefore: end}
	deadline := time.Now().Add(3 * patience)
	for {
		res := skipOne(t, s, "probe", probe)
		switch {
		case res.Status == slotstore.Skipped && res.Marker.Reason == "probe":
			return
		case res.Status != slotstore.NotYet:
			t.Fatalf("waiting for the store's clock to reach %s: %s@%s answered %v", stamp(end), job, stamp(probe.Slot), res.Status)
		case time.Now().After(deadline):
			t.Fatalf("the store's clock still not at %s after %v: %v remain", stamp(end), 3*patience, res.Remaining)
		}
		time.Sleep(min(res.Remaining, patience) + time.Millisecond)
	}
}

// enroll enrolls jobs and returns their generations, failing the test on
// an error.
func enroll(t *testing.T, s slotstore.Store, jobs ...string) []slotstore.Generation {
	t.Helper()
	gens, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: jobs})
	if err != nil {
		t.Fatalf("enroll %q: %v", jobs, err)
	}
	if len(gens) != len(jobs) {
		t.Fatalf("enroll %q: %d generations", jobs, len(gens))
	}
	for i, g := range gens {
		if g.Job != jobs[i] || g.Born.IsZero() {
			t.Fatalf("enroll %q: generation %d is %+v", jobs, i, g)
		}
	}
	return gens
}

// find returns the marker of job@slot from History.
func find(t *testing.T, s slotstore.Store, job string, slot time.Time) (slotstore.Marker, bool) {
	t.Helper()
	ms, err := s.History(t.Context(), slotstore.HistoryParams{Job: job, Limit: 1000})
	if err != nil {
		t.Fatalf("history %s: %v", job, err)
	}
	for _, m := range ms {
		if m.Slot.Equal(slot) {
			return m, true
		}
	}
	return slotstore.Marker{}, false
}

func mustFind(t *testing.T, s slotstore.Store, job string, slot time.Time) slotstore.Marker {
	t.Helper()
	m, ok := find(t, s, job, slot)
	if !ok {
		t.Fatalf("history has no marker for %s@%s", job, stamp(slot))
	}
	return m
}

// unchanged fails the test if a marker changed between two reads.
func unchanged(t *testing.T, what string, before, after slotstore.Marker) {
	t.Helper()
	if before.State != after.State || before.Holder != after.Holder || before.Fence != after.Fence ||
		before.Attempt != after.Attempt || !before.LeaseEnd.Equal(after.LeaseEnd) ||
		before.Outcome != after.Outcome || before.Error != after.Error || before.Duration != after.Duration ||
		!before.FinishedAt.Equal(after.FinishedAt) || before.Reason != after.Reason || before.Manual != after.Manual ||
		before.Backfill != after.Backfill {
		t.Errorf("%s changed the marker:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// increasing fails the test unless fences are positive and strictly
// increasing.
func increasing(t *testing.T, job string, fences []int64) {
	t.Helper()
	for i, f := range fences {
		if f <= 0 || (i > 0 && f <= fences[i-1]) {
			t.Errorf("fences of %s in claim order are not positive and increasing: %v", job, fences)
			return
		}
	}
}

// skipOne records one slot skipped for replica and returns its result.
func skipOne(t *testing.T, s slotstore.Store, replica string, r slotstore.SkipRequest) slotstore.ClaimResult {
	t.Helper()
	res, err := s.Skip(t.Context(), slotstore.SkipParams{Replica: replica, Requests: []slotstore.SkipRequest{r}})
	if err != nil {
		t.Fatalf("skip %s@%s by %s: %v", r.Job, stamp(r.Slot), replica, err)
	}
	if len(res) != 1 {
		t.Fatalf("skip %s@%s by %s: %d results, want 1", r.Job, stamp(r.Slot), replica, len(res))
	}
	return res[0]
}

// finish records outcome o for ref, failing the test on an error.
func finish(t *testing.T, s slotstore.Store, p slotstore.FinishParams) {
	t.Helper()
	if err := s.Finish(t.Context(), p); err != nil {
		t.Fatalf("finish %s@%s fence %d: %v", p.Job, stamp(p.Slot), p.Fence, err)
	}
}

// sameRefs reports whether two lists name the same claims in the same order.
func sameRefs(a, b []slotstore.Ref) bool {
	return slices.EqualFunc(a, b, func(x, y slotstore.Ref) bool {
		return x.Job == y.Job && x.Slot.Equal(y.Slot) && x.Fence == y.Fence
	})
}

// within fails the test unless got lies between lo and hi, widened by a
// second either way for the store's clock.
func within(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	lo, hi = lo.Add(-time.Second), hi.Add(time.Second)
	if got.Before(lo) || got.After(hi) {
		t.Errorf("%s = %s, want between %s and %s", what, stamp(got), stamp(lo), stamp(hi))
	}
}

// wantQueued fails the test unless res is a queued claim's answer for
// job@slot: status Queued, the job and slot alone in Marker, no claim, and
// Remaining within [lo, hi].
func wantQueued(t *testing.T, what string, res slotstore.ClaimResult, job string, slot time.Time, lo, hi time.Duration) {
	t.Helper()
	wantStatus(t, what, res, slotstore.Queued)
	rest := res.Marker
	rest.Job, rest.Slot = "", time.Time{}
	if m := res.Marker; m.Job != job || !m.Slot.Equal(slot) || rest != (slotstore.Marker{}) {
		t.Errorf("%s: marker %+v, want %s@%s alone", what, m, job, stamp(slot))
	}
	if res.Claim != (slotstore.Claim{}) {
		t.Errorf("%s: claim %+v, want none", what, res.Claim)
	}
	if res.Remaining < lo || res.Remaining > hi {
		t.Errorf("%s: remaining %v, want within [%v, %v]", what, res.Remaining, lo, hi)
	}
}

// noMarker fails the test if job@slot has a marker.
func noMarker(t *testing.T, what string, s slotstore.Store, job string, slot time.Time) {
	t.Helper()
	if m, ok := find(t, s, job, slot); ok {
		t.Errorf("%s recorded a marker: %+v", what, m)
	}
}

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// auditRig is a memstore whose clock the test moves, holding job j.
type auditRig struct {
	tb  testing.TB
	st  *memstore.Store
	now time.Time
}

func newAuditRig(tb testing.TB, now time.Time) *auditRig {
	r := &auditRig{tb: tb, now: now}
	r.st = memstore.New(memstore.Options{Clock: func() time.Time { return r.now }})
	return r
}

// auditSpec is a spec of sched in UTC keeping history, with timeout (a
// field that changes the fingerprint alone).
func auditSpec(sched, history, timeout string, rev int64) slotstore.Spec {
	body, _ := json.Marshal(SpecBody{Schedule: sched, Zone: "UTC", Jitter: "0s", StartingDeadline: "1m0s", History: history, Timeout: timeout})
	return slotstore.Spec{Fingerprint: fmt.Sprintf("fp-%x", sha256.Sum256(body)), Body: body, Revision: rev}
}

// enroll enrolls job with s as replica at time at.
func (r *auditRig) enroll(at time.Time, job, replica string, s slotstore.Spec) {
	r.tb.Helper()
	r.now = at
	if _, err := r.st.Enroll(context.Background(), slotstore.EnrollParams{Jobs: []string{job}, Replica: replica, Specs: []slotstore.Spec{s}}); err != nil {
		r.tb.Fatal(err)
	}
}

// skipped records n slots of job j, a second apart from first, skipped.
func (r *auditRig) skipped(first time.Time, n int) {
	r.tb.Helper()
	for i := 0; i < n; i += 1000 {
		var reqs []slotstore.SkipRequest
		for k := i; k < min(i+1000, n); k++ {
			reqs = append(reqs, slotstore.SkipRequest{Job: "j", Slot: first.Add(time.Duration(k) * time.Second), Reason: "missed: down", Retain: 720 * time.Hour})
		}
		if _, err := r.st.Skip(context.Background(), slotstore.SkipParams{Replica: "a", Requests: reqs}); err != nil {
			r.tb.Fatal(err)
		}
	}
}

// audit audits job j of st over [from, to] at now.
func (r *auditRig) audit(st slotstore.Store, from, to time.Time) Audit {
	r.tb.Helper()
	a, err := AuditJob(context.Background(), st, "j", from, to, r.now)
	if err != nil {
		r.tb.Fatal(err)
	}
	return a
}

// A spec that took force half a second after a slot: the slot is listed
// once, under the spec before.
func TestAuditSlotAtSpecChangeListedOnce(t *testing.T) {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newAuditRig(t, base)
	old, fresh := auditSpec("0 * * * * *", "720h", "1m", 1), auditSpec("0 * * * * *", "720h", "2m", 2)
	r.enroll(base.Add(-time.Hour), "j", "a", old)
	r.enroll(base.Add(500*time.Millisecond), "j", "b", fresh)
	r.now = base.Add(time.Hour)
	a := r.audit(r.st, base.Add(-2*time.Minute), base.Add(2*time.Minute))
	var got []string
	for _, s := range a.Slots {
		got = append(got, s.Slot.Format("15:04")+" "+map[string]string{old.Fingerprint: "old", fresh.Fingerprint: "new"}[s.Spec])
	}
	if want := "[09:58 old 09:59 old 10:00 old 10:01 new 10:02 new]"; fmt.Sprint(got) != want || a.Counts[FateUnaccounted] != 5 {
		t.Errorf("slots %v, counts %v; want %s, 5 unaccounted", got, a.Counts, want)
	}
}

// A window of more than MaxAuditSlots slots across a spec change lists
// and counts the newest MaxAuditSlots, up to the window's end, and says
// where the listing starts.
func TestAuditTruncatedListsTheNewest(t *testing.T) {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newAuditRig(t, base)
	r.enroll(base.Add(-2*time.Hour), "j", "a", auditSpec("* * * * * *", "720h", "1m", 1))
	r.enroll(base, "j", "b", auditSpec("* * * * * *", "720h", "2m", 2))
	r.now = base.Add(4 * time.Hour)
	end := base.Add(3 * time.Hour)
	a := r.audit(r.st, base.Add(-time.Hour), end)
	first := end.Add(-(MaxAuditSlots - 1) * time.Second)
	if !a.Truncated || len(a.Slots) != MaxAuditSlots || !a.Listed.Equal(first) || !a.Slots[0].Slot.Equal(first) ||
		!a.Slots[len(a.Slots)-1].Slot.Equal(end) || a.Counts[FateUnaccounted] != MaxAuditSlots {
		t.Errorf("truncated %v, %d slots listed from %s, first %s, last %s, counts %v; want %d from %s to %s",
			a.Truncated, len(a.Slots), a.Listed, a.Slots[0].Slot, a.Slots[len(a.Slots)-1].Slot, a.Counts, MaxAuditSlots, first, end)
	}
}

// MaxAuditSlots slots skipped, then 61 unaccounted: the listing, the
// newest slots, counts those 61.
func TestAuditTruncatedCountsTheNewestUnaccounted(t *testing.T) {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newAuditRig(t, base)
	r.enroll(base, "j", "a", auditSpec("* * * * * *", "720h", "1m", 1))
	r.now = base.Add(5 * time.Hour)
	r.skipped(base, MaxAuditSlots)
	a := r.audit(r.st, base, base.Add(MaxAuditSlots*time.Second+time.Minute))
	if !a.Truncated || a.Counts[FateUnaccounted] != 61 {
		t.Errorf("61 slots of the window are unaccounted; the audit counts %v (truncated=%v)", a.Counts, a.Truncated)
	}
}

// Each spec is judged by its own history: a job that kept 1 h under its
// old spec and keeps 30 days now, or a job retired after keeping a day,
// has its old slots, whose markers were pruned long since, beyond history,
// not unaccounted.
func TestAuditHistoryOfOldAndRetiredSpecs(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		then, now slotstore.Spec
		later     time.Duration // when the audit is made, after base
	}{
		"an older spec": {auditSpec("0 0 * * * *", "1h", "1m", 1), auditSpec("0 0 * * * *", "720h", "1m", 2), 96 * time.Hour},
		"a retired job": {auditSpec("0 0 * * * *", "24h", "1m", 1), RetiredSpec(2), 240 * time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			r := newAuditRig(t, base)
			r.enroll(base, "j", "a", c.then)
			r.enroll(base.Add(72*time.Hour), "j", "b", c.now)
			r.now = base.Add(c.later)
			if a := r.audit(r.st, base.Add(24*time.Hour), base.Add(26*time.Hour)); a.Counts[FateUnaccounted] > 0 || a.Counts[FateBeyondHistory] != 3 {
				t.Errorf("counts %v, want 3 beyond history", a.Counts)
			}
		})
	}
}

// countingStore counts the markers History returns.
type countingStore struct {
	slotstore.Store
	markers, calls int
}

func (c *countingStore) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	ms, err := c.Store.History(ctx, p)
	c.calls++
	c.markers += len(ms)
	return ms, err
}

// An audit lists at most MaxAuditSlots slots, and reads the markers of
// those only, however many its window holds.
func TestAuditReadsBounded(t *testing.T) {
	const n = 50000
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newAuditRig(t, base)
	r.enroll(base, "j", "a", auditSpec("* * * * * *", "720h", "1m", 1))
	r.now = base.Add(n*time.Second + time.Hour)
	r.skipped(base, n)
	c := &countingStore{Store: r.st}
	a := r.audit(c, base, base.Add(n*time.Second))
	if c.markers > 2*MaxAuditSlots || len(a.Slots) != MaxAuditSlots {
		t.Errorf("read %d markers in %d calls for an audit that lists %d", c.markers, c.calls, len(a.Slots))
	}
}

// A window from before 1970 is refused; one from 1970 to 9999 lists the
// newest slots of an hourly job; one from 1970 to 2099 every 29 February
// of a yearly one.
func TestAuditExtremeWindows(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newAuditRig(t, now)
	r.enroll(now, "j", "a", auditSpec("0 0 * * * *", "720h", "1m", 1))
	r.enroll(now, "leap", "a", auditSpec("0 0 0 29 2 *", "720h", "1m", 1))
	if _, err := AuditJob(context.Background(), r.st, "j", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), now, now); !errors.Is(err, ErrBadWindow) {
		t.Errorf("a window from year 1: %v, want ErrBadWindow", err)
	}
	from, to := time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	if a := r.audit(r.st, from, to); !a.Truncated || len(a.Slots) != MaxAuditSlots || !a.Slots[len(a.Slots)-1].Slot.Equal(to.Truncate(time.Hour)) {
		t.Errorf("hourly from 1970 to 9999: truncated %v, %d slots", a.Truncated, len(a.Slots))
	}
	leaps := 0
	for y := 1970; y <= 2099; y++ {
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			leaps++
		}
	}
	a, err := AuditJob(context.Background(), r.st, "leap", from, time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC), now)
	if err != nil || a.Truncated || len(a.Slots) != leaps {
		t.Errorf("29 February from 1970 to 2099: %v, truncated %v, %d slots, want %d", err, a.Truncated, len(a.Slots), leaps)
	}
}

// BenchmarkAuditLongWindow audits an every-second job over a day (86,400
// slots: the newest 10,000 listed, found by the binary search) against
// one over 10,000 seconds (no search), on an empty memstore.
func BenchmarkAuditLongWindow(b *testing.B) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newAuditRig(b, now)
	r.enroll(now.Add(-48*time.Hour), "j", "a", auditSpec("* * * * * *", "720h", "1m", 1))
	r.now = now
	for _, w := range []struct {
		name string
		span time.Duration
	}{{"10000s", MaxAuditSlots * time.Second}, {"day", 24 * time.Hour}} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				if a := r.audit(r.st, now.Add(-w.span), now); len(a.Slots) != MaxAuditSlots {
					b.Fatal(len(a.Slots))
				}
			}
		})
	}
}

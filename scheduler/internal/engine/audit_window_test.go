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

// auditSpec is a spec of sched in UTC keeping 30 days of history.
func auditSpec(t *testing.T, sched string, rev int64, timeout string) slotstore.Spec {
	b := SpecBody{Schedule: sched, Zone: "UTC", Jitter: "0s", StartingDeadline: "1m0s", History: "720h0m0s", Timeout: timeout}
	body, _ := json.Marshal(b)
	return slotstore.Spec{Fingerprint: fmt.Sprintf("fp-%x", sha256.Sum256(body)), Body: body, Revision: rev}
}

// A spec change half a second after a slot: the slot is listed twice.
func TestAuditSlotAtSpecChangeListedOnce(t *testing.T) {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := base
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	enroll := func(s slotstore.Spec, rep string) {
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}, Replica: rep, Specs: []slotstore.Spec{s}}); err != nil {
			t.Fatal(err)
		}
	}
	now = base.Add(-time.Hour)
	enroll(auditSpec(t, "0 * * * * *", 1, "1m0s"), "a")
	now = base.Add(500 * time.Millisecond) // the new spec takes force 0.5s after the 10:00 slot
	enroll(auditSpec(t, "0 * * * * *", 2, "2m0s"), "b")
	now = base.Add(time.Hour)
	a, err := AuditJob(ctx, st, "j", base.Add(-2*time.Minute), base.Add(2*time.Minute), now)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Time]int{}
	for _, s := range a.Slots {
		seen[s.Slot]++
		t.Logf("%s %s %s", s.Slot.Format(time.RFC3339), s.Spec, s.Fate)
	}
	if len(a.Slots) != 5 {
		t.Errorf("%d slots in a window of 5 minutely slots", len(a.Slots))
	}
	for s, n := range seen {
		if n > 1 {
			t.Errorf("slot %s listed %d times; counts %v", s.Format(time.RFC3339), n, a.Counts)
		}
	}
}

// A window of more than MaxAuditSlots slots across a spec change lists
// and counts the newest MaxAuditSlots, up to the window's end, and says
// where the listing starts.
func TestAuditTruncatedListsTheNewest(t *testing.T) {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := base
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	enroll := func(s slotstore.Spec, rep string) {
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}, Replica: rep, Specs: []slotstore.Spec{s}}); err != nil {
			t.Fatal(err)
		}
	}
	now = base.Add(-2 * time.Hour)
	enroll(auditSpec(t, "* * * * * *", 1, "1m0s"), "a")
	now = base
	enroll(auditSpec(t, "* * * * * *", 2, "2m0s"), "b")
	now = base.Add(4 * time.Hour)
	end := base.Add(3 * time.Hour)
	a, err := AuditJob(ctx, st, "j", base.Add(-time.Hour), end, now)
	if err != nil {
		t.Fatal(err)
	}
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
	now := base
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	s := auditSpec(t, "* * * * * *", 1, "1m0s")
	if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}, Replica: "a", Specs: []slotstore.Spec{s}}); err != nil {
		t.Fatal(err)
	}
	now = base.Add(5 * time.Hour)
	for i := 0; i < MaxAuditSlots; i += 500 {
		var reqs []slotstore.SkipRequest
		for k := i; k < i+500 && k < MaxAuditSlots; k++ {
			reqs = append(reqs, slotstore.SkipRequest{Job: "j", Slot: base.Add(time.Duration(k) * time.Second), Reason: "missed: down", Retain: 720 * time.Hour})
		}
		if _, err := st.Skip(ctx, slotstore.SkipParams{Replica: "a", Requests: reqs}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := AuditJob(ctx, st, "j", base, base.Add(MaxAuditSlots*time.Second+time.Minute), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("truncated %v, %d slots, counts %v", a.Truncated, len(a.Slots), a.Counts)
	if !a.Truncated || a.Counts[FateUnaccounted] != 61 {
		t.Errorf("61 slots of the window are unaccounted; the audit counts %v (truncated=%v)", a.Counts, a.Truncated)
	}
}

// auditSpecH is a spec of sched keeping history.
func auditSpecH(sched, history string, rev int64) slotstore.Spec {
	b := SpecBody{Schedule: sched, Zone: "UTC", Jitter: "0s", StartingDeadline: "1m0s", History: history, Timeout: "1m0s"}
	body, _ := json.Marshal(b)
	return slotstore.Spec{Fingerprint: fmt.Sprintf("fp-%x", sha256.Sum256(body)), Body: body, Revision: rev}
}

// A job kept 1h of history under its old spec; the spec in force keeps
// 30 days. A slot of three days ago under the old spec, whose marker was
// pruned long since, is beyond history, not unaccounted.
func TestAuditHistoryOfAnOldSpec(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := base
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	enroll := func(s slotstore.Spec, rep string) {
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}, Replica: rep, Specs: []slotstore.Spec{s}}); err != nil {
			t.Fatal(err)
		}
	}
	enroll(auditSpecH("0 0 * * * *", "1h0m0s", 1), "a")
	now = base.Add(72 * time.Hour)
	enroll(auditSpecH("0 0 * * * *", "720h0m0s", 2), "b")
	now = base.Add(96 * time.Hour)
	a, err := AuditJob(ctx, st, "j", base.Add(24*time.Hour), base.Add(25*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("history_from %s counts %v", a.HistoryFrom, a.Counts)
	if a.Counts[FateUnaccounted] > 0 {
		t.Errorf("slots of a spec that kept 1h of history, 3 days old: %v", a.Counts)
	}
}

// A job retired 5 days ago after 5 days under a spec keeping 1 day of
// history: its slots of 9 days ago are beyond history, not unaccounted.
func TestAuditHistoryOfARetiredJob(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := base
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	enroll := func(s slotstore.Spec, rep string) {
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}, Replica: rep, Specs: []slotstore.Spec{s}}); err != nil {
			t.Fatal(err)
		}
	}
	enroll(auditSpecH("0 0 * * * *", "24h0m0s", 1), "a")
	now = base.Add(5 * 24 * time.Hour)
	enroll(RetiredSpec(2), "a")
	now = base.Add(10 * 24 * time.Hour)
	a, err := AuditJob(ctx, st, "j", base.Add(24*time.Hour), base.Add(26*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("history_from %s counts %v", a.HistoryFrom, a.Counts)
	if a.Counts[FateUnaccounted] > 0 {
		t.Errorf("slots 9 days old of a job that kept 1 day of history: %v", a.Counts)
	}
}

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
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := base
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	s := auditSpec(t, "* * * * * *", 1, "1m0s")
	if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}, Replica: "a", Specs: []slotstore.Spec{s}}); err != nil {
		t.Fatal(err)
	}
	const n = 50000
	now = base.Add(n*time.Second + time.Hour)
	for i := 0; i < n; i += 1000 {
		var reqs []slotstore.SkipRequest
		for k := i; k < i+1000; k++ {
			reqs = append(reqs, slotstore.SkipRequest{Job: "j", Slot: base.Add(time.Duration(k) * time.Second), Reason: "missed: down", Retain: 720 * time.Hour})
		}
		if _, err := st.Skip(ctx, slotstore.SkipParams{Replica: "a", Requests: reqs}); err != nil {
			t.Fatal(err)
		}
	}
	c := &countingStore{Store: st}
	a, err := AuditJob(ctx, c, "j", base, base.Add(n*time.Second), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("listed %d slots (truncated %v); read %d markers in %d History calls", len(a.Slots), a.Truncated, c.markers, c.calls)
	if c.markers > 2*MaxAuditSlots {
		t.Errorf("read %d markers for an audit that lists %d", c.markers, len(a.Slots))
	}
}

// A window from before 1970 is refused; one from 1970 to 9999 lists the
// newest slots of an hourly job; one from 1970 to 2099 every 29 February
// of a yearly one.
func TestAuditExtremeWindows(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	for _, job := range []string{"leap", "hourly"} {
		sch := map[string]string{"leap": "0 0 0 29 2 *", "hourly": "0 0 * * * *"}[job]
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{job}, Replica: "a", Specs: []slotstore.Spec{auditSpec(t, sch, 1, "1m0s")}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := AuditJob(ctx, st, "hourly", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), now, now); !errors.Is(err, ErrBadWindow) {
		t.Errorf("a window from year 1: %v, want ErrBadWindow", err)
	}
	from, to := time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	a, err := AuditJob(ctx, st, "hourly", from, to, now)
	if err != nil || !a.Truncated || len(a.Slots) != MaxAuditSlots || !a.Slots[len(a.Slots)-1].Slot.Equal(to.Truncate(time.Hour)) {
		t.Errorf("hourly from 1970 to 9999: %v, truncated %v, %d slots", err, a.Truncated, len(a.Slots))
	}
	leaps := 0
	for y := 1970; y <= 2099; y++ {
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			leaps++
		}
	}
	a, err = AuditJob(ctx, st, "leap", from, time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC), now)
	if err != nil || a.Truncated || len(a.Slots) != leaps {
		t.Errorf("29 February from 1970 to 2099: %v, truncated %v, %d slots, want %d", err, a.Truncated, len(a.Slots), leaps)
	}
}

// BenchmarkAuditLongWindow audits an every-second job over a day (86,400
// slots: the newest 10,000 listed, found by the binary search) against
// one over 10,000 seconds (no search), on an empty memstore.
func BenchmarkAuditLongWindow(b *testing.B) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := memstore.New(memstore.Options{Clock: func() time.Time { return now.Add(-48 * time.Hour) }})
	ctx := context.Background()
	body, _ := json.Marshal(SpecBody{Schedule: "* * * * * *", Zone: "UTC", Jitter: "0s", StartingDeadline: "1m0s", History: "720h0m0s"})
	if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}, Replica: "a",
		Specs: []slotstore.Spec{{Fingerprint: "fp", Body: body}}}); err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name string
		span time.Duration
	}{{"10000s", MaxAuditSlots * time.Second}, {"day", 24 * time.Hour}} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				a, err := AuditJob(ctx, st, "j", now.Add(-w.span), now, now)
				if err != nil || len(a.Slots) > MaxAuditSlots {
					b.Fatal(err, len(a.Slots))
				}
			}
		})
	}
}

package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A replica coming up with a long starting window on a per-second schedule
// walks only the slots it can use: what it holds is bounded by the policy
// and the records it keeps, never by the slots the window holds (259,200
// here, once each in memory before the walk was made lazy).
func TestCatchUpIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catchUp policy.CatchUp
		limit   int
		jitter  time.Duration
		marker  bool // the job ran before, long before the window
		retries int  // slots caught up
		records int  // slots recorded as not caught up
	}{
		{"all after an outage", policy.CatchUpAll, 10, 0, true, 10, maxMissedRecords},
		{"none, new job", policy.CatchUpNone, 10, 0, false, 1, 0}, // the slot due this second
		// Jitter of at least an hour, well inside the window.
		{"jitter", policy.CatchUpNone, 10, 50 * time.Hour, false, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memstore.New(memstore.Options{})
			ctx := context.Background()
			now := time.Now()
			if tc.marker {
				old := now.Add(-80 * time.Hour).Truncate(time.Second)
				if _, err := st.Skip(ctx, slotstore.SkipParams{Replica: "old", Requests: []slotstore.SkipRequest{{Job: "j", Slot: old, Reason: "test", Retain: 100 * time.Hour}}}); err != nil {
					t.Fatal(err)
				}
				if ms, err := st.History(ctx, slotstore.HistoryParams{Job: "j"}); err != nil || len(ms) != 1 || !ms[0].Slot.Equal(old) {
					t.Fatalf("history %+v %v, want the marker of %v", ms, err, old)
				}
			}
			j := job("j", (&recorder{}).fn)
			j.Schedule, j.Deadline, j.History = mustSchedule(t, "@every 1s"), 72*time.Hour, 100*time.Hour
			j.CatchUp, j.CatchUpLimit, j.Jitter = tc.catchUp, tc.limit, tc.jitter
			e := newEngine(t, j)
			var runs sync.WaitGroup
			l := newLoop(e, st, ctx, &runs)
			newest, ok := l.enroll(ctx)
			if !ok {
				t.Fatal("enroll failed")
			}
			p := e.plans[0]
			l.skip(ctx, l.schedule(p, now, newest["j"]))

			kinds := map[entryKind]int{}
			caughtUp := 0
			var first *entry
			for _, e := range l.h {
				kinds[e.kind]++
				if e.kind == lapse && strings.HasPrefix(e.reason, "catch_up") {
					caughtUp++
				}
				if e.kind == fire {
					first = e
				}
			}
			t.Logf("heap: %d entries, by kind %v", len(l.h), kinds)
			if kinds[fire] != 1 || kinds[retry] != tc.retries || caughtUp != tc.records {
				t.Errorf("fire %d, retry %d, not-caught-up records %d; want 1, %d, %d", kinds[fire], kinds[retry], caughtUp, tc.retries, tc.records)
			}
			// The slots of the jitter still ahead of their try are one chain
			// of fire entries, from the oldest of them.
			if want := p.sched.Next(now.Add(-p.jitter)); first == nil || !first.slot.Equal(want) || !first.at.Equal(want.Add(p.jitter)) {
				t.Errorf("first fire entry %+v, want slot %v at %v", first, want, want.Add(p.jitter))
			}
			if bound := tc.retries + 2*maxMissedRecords + 2; len(l.h) > bound {
				t.Errorf("%d heap entries, want at most %d", len(l.h), bound)
			}
		})
	}
}

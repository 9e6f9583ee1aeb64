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
			gens, ok := e.enroll(ctx, st, e.jobs().plans)
			if !ok {
				t.Fatal("enroll failed")
			}
			p := e.jobs().plans[0]
			l.skip(ctx, l.schedule(p, now, gens["j"]))

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
			if want := p.sched.Next(now.Add(-p.jitter)); first == nil || !first.slot.Equal(want) || !first.at.Equal(p.fireAt(want)) {
				t.Errorf("first fire entry %+v, want slot %v at %v", first, want, p.fireAt(want))
			}
			if bound := tc.retries + 2*maxMissedRecords + 2; len(l.h) > bound {
				t.Errorf("%d heap entries, want at most %d", len(l.h), bound)
			}
		})
	}
}

// The slots a job owes a record of when no replica ran them go back to its
// newest marker, or, for a job with none, to its enrolment, but never to
// before the job's history less a margin for the clocks, whose markers may
// have been pruned, by the store's clock, after they ran (an upgraded
// store's generations begin at the epoch).
func TestOwedFrom(t *testing.T) {
	j := job("j", (&recorder{}).fn)
	j.Schedule, j.History = mustSchedule(t, "0 12 * * *"), 72*time.Hour
	p := newEngine(t, j).jobs().plans[0]
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	now := at("2026-12-06T15:00:00Z")
	for _, tc := range []struct {
		name         string
		born, newest string
		want         string // empty for none
		now          string // empty for now
	}{
		{"nothing known", "", "", "", ""},
		{"enrolled long ago, never run", "2026-11-20T08:00:00Z", "", "2026-12-04T12:00:00Z", ""},
		{"enrolled at the epoch", "1970-01-01T00:00:00Z", "", "2026-12-04T12:00:00Z", ""},
		{"enrolled yesterday", "2026-12-05T03:00:00Z", "", "2026-12-05T12:00:00Z", ""},
		{"enrolled a ClaimLead before a slot", "2026-12-05T11:59:59Z", "", "2026-12-05T12:00:00Z", ""},
		{"enrolled at a slot's instant", "2026-12-05T12:00:00Z", "", "2026-12-06T12:00:00Z", ""},
		{"enrolled just after a slot", "2026-12-05T12:00:00.5Z", "", "2026-12-06T12:00:00Z", ""},
		{"enrolled just now", "2026-12-06T15:00:00Z", "", "2026-12-07T12:00:00Z", ""},
		{"ran yesterday", "2026-11-20T08:00:00Z", "2026-12-05T12:00:00Z", "2026-12-06T12:00:00Z", ""},
		// Markers from before the generation (a store upgraded, or a
		// backup restored): as they say, however old.
		{"ran before its generation", "2026-12-06T14:00:00Z", "2026-12-01T12:00:00Z", "2026-12-02T12:00:00Z", ""},
		// A slot within the margin of its history's end, by this clock,
		// may have been pruned by a store clock that runs ahead.
		{"never run, a slot at its history's end", "2026-11-20T08:00:00Z", "", "2026-12-04T12:00:00Z", "2026-12-06T11:59:30Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g slotstore.Generation
			if tc.born != "" {
				g.Born = at(tc.born)
			}
			if tc.newest != "" {
				g.Newest = at(tc.newest)
			}
			now := now
			if tc.now != "" {
				now = at(tc.now)
			}
			got := p.owedFrom(g, now)
			if tc.want == "" && !got.IsZero() || tc.want != "" && !got.Equal(at(tc.want)) {
				t.Errorf("owedFrom(born %s, newest %s) = %v, want %s", tc.born, tc.newest, got, tc.want)
			}
		})
	}
}

package engine

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A manual or backfilled run says so on its `run started` line; a
// scheduled one carries neither mark.
func TestRunStartedMarksManualAndBackfill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, ctx := memstore.New(memstore.Options{}), context.Background()
		var logs testlog.Buffer
		spec := job("j", (&recorder{}).fn)
		spec.Schedule, spec.Deadline = mustSchedule(t, "@every 10s"), 5*time.Second
		e, err := New(Config{Replica: "a", Incarnation: "t", Log: slog.New(slog.NewJSONHandler(&logs, nil)),
			Now: time.Now, Grace: time.Second, Jobs: []JobSpec{spec}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil {
			t.Fatal(err)
		}
		from := time.Now()
		time.Sleep(time.Minute) // slots no replica ran
		if _, _, err := e.TriggerOn(ctx, st, "j"); err != nil {
			t.Fatal(err)
		}
		bf, err := e.BackfillOn(ctx, st, "j", BackfillParams{From: from.Add(time.Second), To: from.Add(25 * time.Second)})
		if err != nil || bf.ToRun() != 2 {
			t.Fatalf("backfill: %v, %+v", err, bf)
		}
		runCtx, stop := context.WithCancel(ctx)
		go func() { time.Sleep(15 * time.Second); stop() }()
		if err := e.Run(runCtx, RunParams{Store: st}); err != nil {
			t.Fatal(err)
		}
		marks := map[string]int{}
		for _, r := range logs.Logged(t, "run started") {
			switch {
			case r["manual"] == true && r["backfill"] == nil:
				marks["manual"]++
			case r["backfill"] == true && r["manual"] == nil:
				marks["backfill"]++
			case r["manual"] == nil && r["backfill"] == nil:
				marks["scheduled"]++
			default:
				t.Errorf("run started %v", r)
			}
		}
		if marks["manual"] != 1 || marks["backfill"] != 2 || marks["scheduled"] < 1 {
			t.Errorf("run started lines: %v, want 1 manual, 2 backfilled and the scheduled ones\n%s", marks, logs.String())
		}
	})
}

// A run the loop starts of a manual or backfilled slot — a takeover, an
// adoption — is marked as the slot's first run was.
func TestOriginOfMarker(t *testing.T) {
	for _, tc := range []struct {
		m    slotstore.Marker
		want origin
	}{{slotstore.Marker{}, scheduled}, {slotstore.Marker{Manual: true}, triggered}, {slotstore.Marker{Backfill: true}, backfilled}} {
		if got := originOf(tc.m); got != tc.want {
			t.Errorf("originOf(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

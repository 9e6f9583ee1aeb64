package engine

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A holder frozen past its lease whose job ended during the freeze (kill
// -STOP, a GC pause, a suspended VM) lost its lease as surely as one whose
// keeper saw the trust window end: it is counted in leases_lost_total and
// logged as "lease lost", once, with the run's attributes. The freeze is a
// claim sent two leases before the run: the job returns before the
// keeper's timers, due long ago, have had a chance to fire.
func TestFrozenHolderCountsLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, ctx := memstore.New(memstore.Options{}), context.Background()
		time.Sleep(time.Hour)
		if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil {
			t.Fatal(err)
		}
		slot := time.Now().Truncate(time.Second)
		rs, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "a", Incarnation: "test", Requests: []slotstore.ClaimRequest{
			{Job: "j", Slot: slot, Lease: 3 * time.Second, Retain: time.Hour}}})
		if err != nil || rs[0].Status != slotstore.Won {
			t.Fatalf("claim: %+v %v", rs, err)
		}
		var logs testlog.Buffer
		e, err := New(Config{Replica: "a", Incarnation: "test", Log: slog.New(slog.NewJSONHandler(&logs, nil)),
			Now: time.Now, Grace: time.Second, Jobs: []JobSpec{job("j", func(context.Context, jobs.Run) error { return nil })}})
		if err != nil {
			t.Fatal(err)
		}
		p := e.plans[0]
		rctx, cancel := context.WithCancelCause(ctx)
		frozenSince := time.Now().Add(-2 * p.lease)
		if end := e.execute(rctx, cancel, st, p, rs[0].Claim, scheduled, frozenSince, runHooks{}); end != EndLeaseLost {
			t.Fatalf("the run ended %q, want %q", end, EndLeaseLost)
		}
		synctest.Wait() // the keeper's timers, had they anything left to say
		if n := counterValue(e.metrics.leaseLost(p)); n != 1 {
			t.Errorf("slotcron_leases_lost_total = %v, want 1", n)
		}
		lost := logs.Logged(t, "lease lost")
		if len(lost) != 1 {
			t.Fatalf("%d `lease lost` lines, want 1:\n%s", len(lost), logs.String())
		}
		want := map[string]any{"job": "j", "slot": slot.UTC().Format(time.RFC3339), "fence": float64(rs[0].Claim.Fence),
			"attempt": float64(1), "replica": "a", "level": "WARN"}
		for k, v := range want {
			if lost[0][k] != v {
				t.Errorf("`lease lost` %s = %v, want %v", k, lost[0][k], v)
			}
		}
	})
}

func counterValue(c prometheus.Counter) float64 {
	var d dto.Metric
	_ = c.Write(&d)
	return d.GetCounter().GetValue()
}

package engine

import (
	"context"
	"log/slog"
	"strings"
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
	for _, c := range []struct {
		name   string
		frozen func(p *plan) time.Duration // how long before the run's end its claim was sent
		store  func(slotstore.Store) slotstore.Store
		reason string
	}{
		{"frozen past the lease", func(p *plan) time.Duration { return 2 * p.lease }, nil, "frozen or suspended"},
		// However long the freeze, the job ignored nothing: WARN, not ERROR.
		{"frozen past timeout + lease", func(p *plan) time.Duration { return p.timeout + 2*p.lease }, nil, "frozen or suspended"},
		{"outcome refused", func(*plan) time.Duration { return 0 },
			func(st slotstore.Store) slotstore.Store { return refusing{st} }, "refused the outcome"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { lostLeaseCounted(t, c.frozen, c.store, c.reason) })
		})
	}
}

// refusing is a store that refuses every outcome: another claim holds the
// slot.
type refusing struct{ slotstore.Store }

func (refusing) Finish(context.Context, slotstore.FinishParams) error { return slotstore.ErrLeaseLost }

// lostLeaseCounted runs a claimed slot whose claim was sent frozen before
// the run's end, on st as wrap makes it, and checks that its lost lease is
// counted once and logged once at WARN, with reason.
func lostLeaseCounted(t *testing.T, frozen func(*plan) time.Duration, wrap func(slotstore.Store) slotstore.Store, reason string) {
	var st slotstore.Store = memstore.New(memstore.Options{})
	ctx := context.Background()
	time.Sleep(time.Hour)
	if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(slotstore.ClaimLead) // to the first slot the generation covers
	slot := time.Now().Truncate(time.Second)
	rs, err := st.Claim(ctx, slotstore.ClaimParams{Replica: "a", Incarnation: "test", Requests: []slotstore.ClaimRequest{
		{Job: "j", Slot: slot, Lease: 3 * time.Second, Retain: time.Hour}}})
	if err != nil || rs[0].Status != slotstore.Won {
		t.Fatalf("claim: %+v %v", rs, err)
	}
	if wrap != nil {
		st = wrap(st)
	}
	var logs testlog.Buffer
	e, err := New(Config{Replica: "a", Incarnation: "test", Log: slog.New(slog.NewJSONHandler(&logs, nil)),
		Now: time.Now, Grace: time.Second, Jobs: []JobSpec{job("j", func(context.Context, jobs.Run) error { return nil })}})
	if err != nil {
		t.Fatal(err)
	}
	p := e.jobs().plans[0]
	rctx, cancel := context.WithCancelCause(ctx)
	if end := e.execute(rctx, cancel, st, p, rs[0].Claim, scheduled, time.Now().Add(-frozen(p)), begin{}, runHooks{}); end != EndLeaseLost {
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
	if r, _ := lost[0]["reason"].(string); !strings.Contains(r, reason) {
		t.Errorf("`lease lost` reason %q, want one saying %q", r, reason)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var d dto.Metric
	_ = c.Write(&d)
	return d.GetCounter().GetValue()
}

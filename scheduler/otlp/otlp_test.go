package otlp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/otlp"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A run whose holder lost its lease is taken over by another replica, and
// both attempts reach an OTLP/HTTP collector: each run span carries the
// job, slot, fence, attempt and replica, with its claim, renewals and
// finish as children; the takeover's span links to the first attempt's,
// which the second replica never saw; the job's own span nests under its
// run's.
func TestTakeoverTraceExported(t *testing.T) {
	rcv := newReceiver(t)
	st := memstore.New(memstore.Options{})
	won := make(chan struct{})
	toA := &cutStore{Store: st, won: won}   // a wins the slot, then cannot renew
	toB := &cutStore{Store: st, after: won} // b claims only after a has won
	slot := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	doc := fmt.Sprintf(`
shutdown_grace: 5s
tracing: {otlp: {endpoint: %s}}
jobs:
  nightly: {schedule: "%d %d %d * * *", lease: 1s}
`, rcv.srv.URL, slot.Second(), slot.Minute(), slot.Hour())
	done := make(chan struct{})
	reg := jobs.NewRegistry()
	reg.Register("nightly", func(ctx context.Context, run jobs.Run) error {
		if run.Attempt == 1 {
			<-ctx.Done() // until the lease is lost
			return context.Cause(ctx)
		}
		_, sp := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, "job work")
		time.Sleep(800 * time.Millisecond) // the job's work, over a lease renewal
		sp.End()
		close(done)
		return nil
	})
	stopA := start(t, doc, "a", reg, toA)
	stopB := start(t, doc, "b", reg, toB)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("no second attempt ran")
	}
	stopB() // each Run flushes its spans before it returns
	stopA()

	runs := rcv.named("slotcron.run")
	if len(runs) != 2 {
		t.Fatalf("%d run spans, want 2: %v", len(runs), runs)
	}
	first, second := byAttempt(t, runs, 1), byAttempt(t, runs, 2)
	for _, r := range []struct {
		s       span
		replica string
		end     string
	}{{first, "a", "lease_lost"}, {second, "b", "succeeded"}} {
		if r.s.replica != r.replica || attr(r.s.GetAttributes(), "slotcron.replica").GetStringValue() != r.replica {
			t.Errorf("attempt %d exported by %q, want %q", attempt(r.s), r.s.replica, r.replica)
		}
		if got := attr(r.s.GetAttributes(), "slotcron.job").GetStringValue(); got != "nightly" {
			t.Errorf("attempt %d: job %q", attempt(r.s), got)
		}
		if got := attr(r.s.GetAttributes(), "slotcron.slot").GetStringValue(); got != slot.Format(time.RFC3339) {
			t.Errorf("attempt %d: slot %q, want %s", attempt(r.s), got, slot.Format(time.RFC3339))
		}
		if got := attr(r.s.GetAttributes(), "slotcron.end").GetStringValue(); got != r.end {
			t.Errorf("attempt %d ended %q, want %q", attempt(r.s), got, r.end)
		}
		if len(r.s.GetParentSpanId()) != 0 {
			t.Errorf("attempt %d's run span has a parent", attempt(r.s))
		}
		if n := len(children(rcv, r.s, "slotcron.claim")); n != 1 {
			t.Errorf("attempt %d: %d claim spans, want 1", attempt(r.s), n)
		}
	}
	f1, f2 := attr(first.GetAttributes(), "slotcron.fence").GetIntValue(), attr(second.GetAttributes(), "slotcron.fence").GetIntValue()
	if f1 <= 0 || f2 <= f1 {
		t.Errorf("fences %d then %d, want positive and growing", f1, f2)
	}
	if first.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("the attempt that lost its lease has status %v", first.GetStatus())
	}
	if !bytes.Equal(first.GetTraceId(), second.GetTraceId()) {
		t.Errorf("the attempts of one slot are in two traces")
	}
	links := second.GetLinks()
	if len(links) != 1 || !bytes.Equal(links[0].GetTraceId(), first.GetTraceId()) || !bytes.Equal(links[0].GetSpanId(), first.GetSpanId()) {
		t.Fatalf("the takeover links to %v, want attempt 1's span %x", links, first.GetSpanId())
	}
	if kind := attr(links[0].GetAttributes(), "slotcron.link").GetStringValue(); kind != "takeover" {
		t.Errorf("link kind %q, want takeover", kind)
	}
	if failed := children(rcv, first, "slotcron.renew"); len(failed) == 0 || failed[0].GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("attempt 1's renewals, all refused, are %v", failed)
	}
	if len(children(rcv, second, "slotcron.renew")) == 0 {
		t.Errorf("attempt 2 renewed its lease in no span")
	}
	if n := len(children(rcv, second, "slotcron.finish")); n != 1 {
		t.Errorf("attempt 2: %d finish spans, want 1", n)
	}
	if n := len(children(rcv, second, "job work")); n != 1 {
		t.Errorf("the job's own span is not a child of its run's: %d", n)
	}
}

// start runs a replica on st until the returned function stops it.
func start(t *testing.T, doc, replica string, reg *jobs.Registry, st slotstore.Store) func() {
	t.Helper()
	cfg, err := scheduler.Parse("test.yaml", []byte("replica: "+replica+"\n"+doc))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("SLOTCRON_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s, err := scheduler.New(cfg, reg, scheduler.WithStore(st), scheduler.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("replica %s: %v", replica, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// cutStore is a store as one replica reaches it: with won, it closes won
// once the replica wins a claim and refuses every call after (renewals and
// claims); with after, it claims only once after is closed.
type cutStore struct {
	slotstore.Store
	won, after chan struct{}
	once       sync.Once
}

func (c *cutStore) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	if c.after != nil {
		select {
		case <-c.after:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.won != nil {
		select {
		case <-c.won:
			return nil, errors.New("cut off from the store")
		default:
		}
	}
	rs, err := c.Store.Claim(ctx, p)
	for _, r := range rs {
		if r.Status == slotstore.Won && c.won != nil {
			c.once.Do(func() { close(c.won) })
		}
	}
	return rs, err
}

func (c *cutStore) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if c.won != nil {
		return errors.New("cut off from the store")
	}
	return c.Store.Renew(ctx, p)
}

func attempt(s span) int64 { return attr(s.GetAttributes(), "slotcron.attempt").GetIntValue() }

func byAttempt(t *testing.T, spans []span, n int64) span {
	t.Helper()
	for _, s := range spans {
		if attempt(s) == n {
			return s
		}
	}
	t.Fatalf("no run span of attempt %d", n)
	return span{}
}

// children are the spans named name whose parent is s.
func children(r *receiver, s span, name string) []span {
	var out []span
	for _, c := range r.named(name) {
		if bytes.Equal(c.GetParentSpanId(), s.GetSpanId()) && bytes.Equal(c.GetTraceId(), s.GetTraceId()) {
			out = append(out, c)
		}
	}
	return out
}

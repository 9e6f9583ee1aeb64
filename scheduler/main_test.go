package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLogger discards logs unless SLOTCRON_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SLOTCRON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// event is one observation of a job by the recorder.
type event struct {
	run      jobs.Run
	started  time.Time
	ended    time.Time
	cause    error // context cause when the job saw cancellation, else nil
	finished bool  // the job ran to its end without cancellation
}

// recorder is a job that records every run and sleeps for a while,
// honouring cancellation.
type recorder struct {
	mu     sync.Mutex
	events []*event
	sleep  time.Duration
	err    error
}

func (r *recorder) fn(ctx context.Context, run jobs.Run) error {
	ev := &event{run: run, started: time.Now()}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	var err error
	if r.sleep > 0 {
		t := time.NewTimer(r.sleep)
		select {
		case <-t.C:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
		t.Stop()
	}
	r.mu.Lock()
	ev.ended, ev.cause, ev.finished = time.Now(), err, err == nil
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.err
}

func (r *recorder) snapshot() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]event, len(r.events))
	for i, e := range r.events {
		out[i] = *e
	}
	sort.Slice(out, func(i, j int) bool { return out[i].run.Fence < out[j].run.Fence })
	return out
}

// replica builds a scheduler named name on st from a YAML config, with
// opts beyond its store and logger.
func replica(t *testing.T, st slotstore.Store, name, yamlDoc string, reg *jobs.Registry, opts ...Option) *Scheduler {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(yamlDoc))
	if err != nil {
		t.Fatalf("parse config: %v", err)
	}
	cfg.Replica = name
	opts = append([]Option{WithStore(st), WithLogger(testLogger())}, opts...)
	s, err := New(cfg, reg, opts...)
	if err != nil {
		t.Fatalf("new scheduler: %v", err)
	}
	return s
}

// start runs s until the returned stop is called; stop waits for Run, and
// may be called again (deferred, for a test that fails first).
func start(t *testing.T, s *Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// flaky wraps a store and fails every call while down is set: the replica
// using it is cut off from the store, as by a partition or a long pause.
type flaky struct {
	slotstore.Store
	mu   sync.Mutex
	down bool
}

var errCut = errors.New("test: cut off from the store")

func (f *flaky) cut(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *flaky) isDown() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

func (f *flaky) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	if f.isDown() {
		return nil, errCut
	}
	return f.Store.Claim(ctx, p)
}

func (f *flaky) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if f.isDown() {
		return errCut
	}
	return f.Store.Renew(ctx, p)
}

func (f *flaky) Finish(ctx context.Context, p slotstore.FinishParams) error {
	if f.isDown() {
		return errCut
	}
	return f.Store.Finish(ctx, p)
}

func (f *flaky) Release(ctx context.Context, r slotstore.Ref) error {
	if f.isDown() {
		return errCut
	}
	return f.Store.Release(ctx, r)
}

// rig is the usual set-up of an engine test: a memory store, and a registry
// in which every named job is the recorder.
func rig(rec *recorder, names ...string) (*memstore.Store, *recorder, *jobs.Registry) {
	reg := jobs.NewRegistry()
	for _, name := range names {
		reg.Register(name, rec.fn)
	}
	return steadyStore(), rec, reg
}

// steadyStore is a memory store that has recorded every job since a
// ClaimLead before now: a test that starts at a slot's instant has that
// slot run (slotstore.Generation.Covers), and no slot before it owed.
func steadyStore() *memstore.Store {
	return memstore.New(memstore.Options{Since: time.Now().Add(-slotstore.ClaimLead)})
}

// runsAtLeast is a poll's answer to whether n runs are at least want.
func runsAtLeast(want, n int) error {
	if n < want {
		return fmt.Errorf("%d runs, want %d", n, want)
	}
	return nil
}

// counter reads the counter name{labels} of reg, labels given as name,
// value pairs; 0 when it has no such series.
func counter(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	return sample(t, reg, name, labels...)
}

// gauge reads the gauge name{labels} of reg as counter does.
func gauge(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	return sample(t, reg, name, labels...)
}

// sample reads the counter or gauge name{labels} of reg.
func sample(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if f.GetName() == name && maps.Equal(got, want) {
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

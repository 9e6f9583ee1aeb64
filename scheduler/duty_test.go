package scheduler

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// termLog records the terms of a duty across replicas.
type termLog struct {
	mu     sync.Mutex
	terms  []term
	active int
	most   int
}

type term struct {
	replica      string
	fence        int64
	start, ended time.Time
}

func (l *termLog) duty(ctx context.Context, d jobs.Duty) error {
	l.mu.Lock()
	l.active++
	l.most = max(l.most, l.active)
	i := len(l.terms)
	l.terms = append(l.terms, term{replica: d.Replica, fence: d.Fence, start: time.Now()})
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	l.active--
	l.terms[i].ended = time.Now()
	l.mu.Unlock()
	return nil
}

func (l *termLog) snapshot() ([]term, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]term(nil), l.terms...), l.most
}

// One leader at a time; a leader cut off from the store stops before its
// successor starts; the successor's fence is higher; a leader that shuts
// down hands over at once.
func TestDutyFailoverAndHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		log := &termLog{}
		reg := jobs.NewRegistry()
		reg.RegisterDuty("fanout", log.duty)
		conf := `duties: {fanout: {lease: 3s}}`
		cutA := &flaky{Store: st}
		stopA := start(t, replica(t, cutA, "a", conf, reg))
		synctest.Wait()
		stopB := start(t, replica(t, st, "b", conf, reg))
		stopC := start(t, replica(t, st, "c", conf, reg))
		time.Sleep(10 * time.Second)
		cutA.cut(true)
		cut := time.Now()
		time.Sleep(10 * time.Second)
		terms, _ := log.snapshot()
		if len(terms) != 2 {
			t.Fatalf("terms %+v, want a's and one successor's", terms)
		}
		if terms[0].replica != "a" || terms[0].ended.IsZero() || !terms[0].ended.Before(terms[1].start) {
			t.Errorf("a's term %+v must end before the successor's %+v starts", terms[0], terms[1])
		}
		if terms[1].fence <= terms[0].fence {
			t.Errorf("fences %d then %d", terms[0].fence, terms[1].fence)
		}
		if took := terms[1].start.Sub(cut); took > 3*time.Second+200*time.Millisecond {
			t.Errorf("takeover %v after the cut, want within the lease", took)
		}
		// Graceful shutdown of the current leader hands over at once.
		second := terms[1].replica
		stop := map[string]func(){"b": stopB, "c": stopC}
		stopped := time.Now()
		stop[second]()
		delete(stop, second)
		time.Sleep(time.Second)
		terms, most := log.snapshot()
		if len(terms) != 3 || terms[2].start.Sub(stopped) > 200*time.Millisecond {
			t.Errorf("after %s shut down: terms %+v", second, terms)
		}
		if most != 1 {
			t.Errorf("%d leaders at once", most)
		}
		for _, f := range stop {
			f()
		}
		stopA()
	})
}

// givenElector campaigns by itself: every Lead wins one term at once.
type givenElector struct {
	mu    sync.Mutex
	leads []string
}

func (e *givenElector) Lead(ctx context.Context, p leader.Params, fn func(context.Context, leader.Term)) error {
	e.mu.Lock()
	e.leads = append(e.leads, p.Name)
	e.mu.Unlock()
	fn(ctx, leader.Term{Fence: 7})
	return ctx.Err()
}

func (e *givenElector) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.leads)
}

// WithElector's elector is the one duties campaign with.
func TestWithElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &termLog{}
		reg := jobs.NewRegistry()
		reg.RegisterDuty("fanout", log.duty)
		el := &givenElector{}
		stop := start(t, replica(t, memstore.New(memstore.Options{}), "a", `duties: {fanout: {lease: 3s}}`, reg, WithElector(el)))
		time.Sleep(time.Second)
		stop()
		terms, _ := log.snapshot()
		if el.count() != 1 || len(terms) != 1 || terms[0].fence != 7 {
			t.Fatalf("%d campaigns on the given elector, terms %+v; want one, with its fence 7", el.count(), terms)
		}
	})
}

// Every line of a replica, its engine's, its runs', its duties' and its
// elector's, names the replica once.
func TestLogsNameTheReplicaOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf testlog.Buffer
		reg := jobs.NewRegistry()
		reg.Register("tick", func(ctx context.Context, run jobs.Run) error {
			run.Logger().Info("ticked")
			return nil
		})
		log := &termLog{}
		reg.RegisterDuty("fanout", log.duty)
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := replica(t, memstore.New(memstore.Options{}), "a", `{jobs: {tick: {schedule: "@every 1s"}}, duties: {fanout: {lease: 3s}}}`,
			reg, WithLogger(logger))
		stop := start(t, s)
		time.Sleep(3 * time.Second)
		stop()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) < 5 {
			t.Fatalf("only %d lines logged:\n%s", len(lines), buf.String())
		}
		for _, l := range lines {
			if n := strings.Count(l, " replica="); n != 1 {
				t.Errorf("replica named %d times: %s", n, l)
			}
		}
	})
}

package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// amnesiac is a store that can lose everything it holds at once, as a
// Redis restarted with no persistence does.
type amnesiac struct {
	mu  sync.Mutex
	cur *memstore.Store
}

func (a *amnesiac) store() *memstore.Store {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// forget drops every marker, fence, generation and pause.
func (a *amnesiac) forget() {
	a.mu.Lock()
	old := a.cur
	a.cur = memstore.New(memstore.Options{})
	a.mu.Unlock()
	old.Close()
}

func (a *amnesiac) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	return a.store().Claim(ctx, p)
}
func (a *amnesiac) Renew(ctx context.Context, p slotstore.RenewParams) error {
	return a.store().Renew(ctx, p)
}
func (a *amnesiac) Finish(ctx context.Context, p slotstore.FinishParams) error {
	return a.store().Finish(ctx, p)
}
func (a *amnesiac) Release(ctx context.Context, r slotstore.Ref) error {
	return a.store().Release(ctx, r)
}
func (a *amnesiac) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	return a.store().Skip(ctx, p)
}
func (a *amnesiac) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	return a.store().Enroll(ctx, p)
}
func (a *amnesiac) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	return a.store().Catalog(ctx, p)
}
func (a *amnesiac) WriteSchedules(ctx context.Context, p slotstore.WriteSchedulesParams) ([]slotstore.ScheduleResult, error) {
	return a.store().WriteSchedules(ctx, p)
}
func (a *amnesiac) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	return a.store().Schedules(ctx, p)
}
func (a *amnesiac) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	return a.store().ScheduleChanges(ctx, p)
}
func (a *amnesiac) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	return a.store().SetPause(ctx, p)
}
func (a *amnesiac) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	return a.store().Pauses(ctx)
}
func (a *amnesiac) Beat(ctx context.Context, b slotstore.Beat) error { return a.store().Beat(ctx, b) }
func (a *amnesiac) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	return a.store().Replicas(ctx)
}
func (a *amnesiac) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	return a.store().History(ctx, p)
}
func (a *amnesiac) AppendAction(ctx context.Context, x slotstore.Action) (slotstore.Action, error) {
	return a.store().AppendAction(ctx, x)
}
func (a *amnesiac) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	return a.store().Actions(ctx, p)
}
func (a *amnesiac) Prune(ctx context.Context) (int, error) { return a.store().Prune(ctx) }
func (a *amnesiac) Close() error                           { return nil }

// A store that loses its data never makes a finished slot run again: a
// replica restarted after the loss catches up, and the slots it finds
// without a marker are older than the store's new generation, so they are
// recorded skipped, not run.
func TestStoreDataLossRunsNoSlotTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &amnesiac{cur: memstore.New(memstore.Options{})}
		_, rec, reg := rig(&recorder{sleep: 100 * time.Millisecond}, "tick", "ten")
		conf := `jobs:
  tick: {schedule: "* * * * * *", lease: 3s}
  ten: {schedule: "*/10 * * * * *", lease: 3s, catch_up: all, catch_up_limit: 5}
`
		stop1 := start(t, replica(t, st, "r1", conf, reg))
		stop2 := start(t, replica(t, st, "r2", conf, reg))
		for range 2 {
			time.Sleep(25*time.Second + 300*time.Millisecond)
			st.forget()
			stop2()
			stop2 = start(t, replica(t, st, "r2", conf, reg))
		}
		time.Sleep(25 * time.Second)
		stop1()
		stop2()

		seen := map[string]int{}
		for _, ev := range rec.snapshot() {
			seen[ev.run.Key()]++
		}
		ran := 0
		for k, n := range seen {
			ran++
			if n > 1 {
				t.Errorf("%s ran %d times", k, n)
			}
		}
		if ran < 60 {
			t.Errorf("only %d slots ran", ran)
		}
		skipped := 0
		for _, m := range mustHistory(t, st, "tick") {
			if m.State == slotstore.StateSkipped && m.Reason == slotstore.ReasonDataLoss {
				skipped++
			}
		}
		t.Logf("%d slots ran, %d tick slots skipped for data loss", ran, skipped)
	})
}

func mustHistory(t *testing.T, st slotstore.Store, job string) []slotstore.Marker {
	t.Helper()
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: job, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// A replica whose clock runs ahead by more than the starting deadline
// cannot record as missed the slots the other replicas are about to run:
// the store judges "missed" by its own clock.
func TestFastClockMissesNoSlot(t *testing.T) {
	for _, skew := range []time.Duration{time.Minute, -time.Minute} {
		t.Run(fmt.Sprint(skew), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				st, rec, reg := rig(&recorder{sleep: 100 * time.Millisecond}, "tick")
				conf := `jobs: {tick: {schedule: "*/5 * * * * *", starting_deadline: 30s, lease: 3s}}`
				stop1 := start(t, replica(t, st, "r1", conf, reg))
				time.Sleep(time.Minute)
				cfg, err := Parse("test.yaml", []byte(conf))
				if err != nil {
					t.Fatal(err)
				}
				cfg.Replica = "skewed"
				s, err := New(cfg, reg, WithStore(st), WithLogger(testLogger()), WithClock(func() time.Time { return time.Now().Add(skew) }))
				if err != nil {
					t.Fatal(err)
				}
				stop2 := start(t, s)
				time.Sleep(2 * time.Minute)
				stop1()
				stop2()

				seen := map[time.Time]int{}
				for _, ev := range rec.snapshot() {
					seen[ev.run.Slot]++
				}
				for s := t0.Add(5 * time.Second); s.Before(t0.Add(170 * time.Second)); s = s.Add(5 * time.Second) {
					if seen[s.UTC()] != 1 {
						m, _ := findMarker(st, "tick", s)
						t.Errorf("slot %v ran %d times; marker %s %q by %s", s.UTC().Format(time.TimeOnly), seen[s.UTC()], m.State, m.Reason, m.Holder)
					}
				}
			})
		})
	}
}

func findMarker(st slotstore.Store, job string, slot time.Time) (slotstore.Marker, bool) {
	ms, _ := st.History(context.Background(), slotstore.HistoryParams{Job: job, Limit: 10000})
	for _, m := range ms {
		if m.Slot.Equal(slot.UTC()) {
			return m, true
		}
	}
	return slotstore.Marker{}, false
}

// deaf drops its first claim batch on the floor and answers that the
// outcome is unknown: a request lost before it reached the store.
type deaf struct {
	slotstore.Store
	dropped atomic.Bool
}

func (s *deaf) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	if !s.dropped.Swap(true) {
		return nil, fmt.Errorf("claim: %w: test: request lost", slotstore.ErrOutcomeUnknown)
	}
	return s.Store.Claim(ctx, p)
}

// Two live processes with the same replica name (a copied configuration)
// never both run a slot: a process whose claim's outcome is unknown adopts
// only a claim its own incarnation made.
func TestSameNameProcessesDoNotAdoptEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, rec, reg := rig(&recorder{sleep: 2 * time.Second}, "j")
		conf := `jobs: {j: {schedule: "@every 1h", lease: 30s}}`
		stopA := start(t, replica(t, &deaf{Store: st}, "worker", conf, reg))
		stopB := start(t, replica(t, st, "worker", conf, reg))
		time.Sleep(10 * time.Second)
		stopA()
		stopB()
		evs := rec.snapshot()
		if len(evs) != 1 {
			var runs []string
			for _, ev := range evs {
				runs = append(runs, fmt.Sprintf("%s fence %d", ev.run.Key(), ev.run.Fence))
			}
			t.Fatalf("runs: %s; want the slot run once", strings.Join(runs, ", "))
		}
	})
}

// soon is a daily schedule whose slot is the second d from now, in UTC: a
// slot after the store's record of the job begins, for real-time tests on
// a fresh store (a slot from before would be skipped: the store cannot know
// whether it ran).
func soon(d time.Duration) string {
	at := time.Now().Add(d).UTC()
	return fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour())
}

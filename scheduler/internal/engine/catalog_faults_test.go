package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// helloSpec is the job startReplica runs, on schedule spec, for a reload.
func helloSpec(t *testing.T, r *replicaOf, spec string) JobSpec {
	t.Helper()
	j := job("hello", r.rec.fn)
	j.Schedule, j.Deadline = mustSchedule(t, spec), 5*time.Second
	return j
}

// oldInConflict starts, at the top of a minute on a new store, replica old
// with hello every 2 s, then replica new with it every 3 s, and returns
// them once old is in conflict.
func oldInConflict(t *testing.T) (st *memstore.Store, old, fresh *replicaOf) {
	t.Helper()
	st = memstore.New(memstore.Options{})
	time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
	old = startReplica(t, st, "old", "*/2 * * * * *", 0)
	time.Sleep(3 * time.Second)
	fresh = startReplica(t, st, "new", "*/3 * * * * *", 0)
	time.Sleep(5 * time.Second)
	if g := old.conflicted(); g != 1 {
		t.Fatalf("old not in conflict: %v", g)
	}
	return st, old, fresh
}

// A replica in conflict whose reload brings the spec in force claims again,
// and its conflict gauge goes back to 0.
func TestCatalogGaugeClearsOnReloadToSpecInForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, old, fresh := oldInConflict(t)
		if _, err := old.e.Reload(context.Background(), st, []JobSpec{helloSpec(t, old, "*/3 * * * * *")}, 0); err != nil {
			t.Fatal(err)
		}
		n0 := len(old.rec.snapshot())
		fresh.shutdown(t)
		time.Sleep(3*catalogEvery + 5*time.Second)
		ran := len(old.rec.snapshot()) - n0
		t.Logf("old replica ran %d slots after reload; in conflict: %v", ran, old.e.jobs().plans[0].inConflict())
		if g := old.conflicted(); g != 0 {
			t.Errorf("slotcron_job_spec_conflict{hello} on the reloaded replica = %v, want 0 (it runs the spec in force and ran %d slots)", g, ran)
		}
		old.shutdown(t)
	})
}

// A replica in conflict whose reload removes the job has no conflict gauge
// for it any more.
func TestCatalogGaugeGoneWithRemovedJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, old, fresh := oldInConflict(t)
		if _, err := old.e.Reload(context.Background(), st, nil, 0); err != nil {
			t.Logf("reload: %v", err)
		}
		time.Sleep(3 * catalogEvery)
		if g := old.conflicted(); g != 0 {
			t.Errorf("slotcron_job_spec_conflict{hello} = %v on a replica that no longer has the job", g)
		}
		fresh.shutdown(t)
		old.shutdown(t)
	})
}

// An outage across a deploy that changed the schedule: the slots of the
// old spec during the outage are swept into missed records too, so none
// stays unaccounted.
func TestCatalogOutageAcrossSpecChangeAccounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 5*time.Second)))
		a := startReplica(t, st, "a", "*/10 * * * * *", 0)
		time.Sleep(15 * time.Second)
		a.shutdown(t)
		down := time.Now()
		time.Sleep(2 * time.Minute)
		up := time.Now()
		b := startReplica(t, st, "b", "*/15 * * * * *", 0)
		time.Sleep(sweepSpan + 2*sweepEvery) // the sweep audits each job once in sweepSpan
		b.shutdown(t)
		au, err := AuditJob(context.Background(), st, "hello", down.Add(time.Second), up.Add(-time.Second), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("audit of the outage: %v", au.Counts)
		for _, s := range au.Slots {
			reason := ""
			if s.Marker != nil {
				reason = s.Marker.Reason
			}
			t.Logf("  %s spec=%s fate=%s %s", s.Slot.Format("15:04:05"), s.Spec, s.Fate, reason)
		}
		if au.Counts[FateUnaccounted] != 0 {
			t.Errorf("after the outage and a sweep round of a live replica, %d slots still unaccounted", au.Counts[FateUnaccounted])
		}
	})
}

// swapStore is a memstore whose data a test can lose at once (an empty
// restart of the store): swap replaces it with a new, empty one.
type swapStore struct {
	cur atomic.Pointer[memstore.Store]
}

func newSwapStore() *swapStore {
	s := &swapStore{}
	s.swap()
	return s
}

func (s *swapStore) swap()                                            { s.cur.Store(memstore.New(memstore.Options{})) }
func (s *swapStore) st() *memstore.Store                              { return s.cur.Load() }
func (s *swapStore) Close() error                                     { return s.st().Close() }
func (s *swapStore) Prune(ctx context.Context) (int, error)           { return s.st().Prune(ctx) }
func (s *swapStore) Beat(ctx context.Context, p slotstore.Beat) error { return s.st().Beat(ctx, p) }
func (s *swapStore) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	return s.st().Replicas(ctx)
}
func (s *swapStore) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	return s.st().Catalog(ctx, p)
}
func (s *swapStore) WriteSchedules(ctx context.Context, p slotstore.WriteSchedulesParams) ([]slotstore.ScheduleResult, error) {
	return s.st().WriteSchedules(ctx, p)
}
func (s *swapStore) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	return s.st().Schedules(ctx, p)
}
func (s *swapStore) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	return s.st().ScheduleChanges(ctx, p)
}
func (s *swapStore) AppendAction(ctx context.Context, a slotstore.Action) (slotstore.Action, error) {
	return s.st().AppendAction(ctx, a)
}
func (s *swapStore) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	return s.st().Actions(ctx, p)
}
func (s *swapStore) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	return s.st().Enroll(ctx, p)
}
func (s *swapStore) Claim(ctx context.Context, p slotstore.ClaimParams) ([]slotstore.ClaimResult, error) {
	return s.st().Claim(ctx, p)
}
func (s *swapStore) Skip(ctx context.Context, p slotstore.SkipParams) ([]slotstore.ClaimResult, error) {
	return s.st().Skip(ctx, p)
}
func (s *swapStore) Renew(ctx context.Context, p slotstore.RenewParams) error {
	return s.st().Renew(ctx, p)
}
func (s *swapStore) Finish(ctx context.Context, p slotstore.FinishParams) error {
	return s.st().Finish(ctx, p)
}
func (s *swapStore) Release(ctx context.Context, ref slotstore.Ref) error {
	return s.st().Release(ctx, ref)
}
func (s *swapStore) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	return s.st().History(ctx, p)
}
func (s *swapStore) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	return s.st().SetPause(ctx, p)
}
func (s *swapStore) Pauses(ctx context.Context) (slotstore.Pauses, error) { return s.st().Pauses(ctx) }

// After a loss of the store's data in the middle of a rollout, the lower
// revision's replica may enroll first into the empty catalog; the replica
// of the higher revision, then in conflict, takes force back.
func TestCatalogStoreLossKeepsHigherRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSwapStore()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		a := startReplica(t, st, "a", "*/2 * * * * *", 1)
		time.Sleep(3 * time.Second)
		b := startReplica(t, st, "b", "*/3 * * * * *", 2)
		time.Sleep(8 * time.Second)
		if a.conflicted() != 1 || b.conflicted() != 0 {
			t.Fatalf("before the loss: a %v b %v", a.conflicted(), b.conflicted())
		}
		st.swap() // the store lost its data
		time.Sleep(3 * catalogEvery)
		es, err := st.Catalog(context.Background(), slotstore.CatalogParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			t.Logf("in force after the loss: %s rev %d by %s", e.InForce.Fingerprint, e.InForce.Revision, e.InForce.Replica)
			if e.InForce.Revision != 2 {
				t.Errorf("after the store lost its data, revision %d is in force (a %v, b %v in conflict); want the higher, 2",
					e.InForce.Revision, a.conflicted(), b.conflicted())
			}
		}
		if len(es) == 0 {
			t.Errorf("no catalog entry after the loss")
		}
		b.shutdown(t)
		a.shutdown(t)
	})
}

// After a loss of the store's data with every replica on one spec, the
// sweeping replica enrolls the jobs missing from the catalog again, so
// they are audited, swept and checked.
func TestCatalogStoreLossEnrolledAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSwapStore()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		a := startReplica(t, st, "a", "*/2 * * * * *", 0)
		time.Sleep(5 * time.Second)
		st.swap()
		time.Sleep(5 * time.Minute)
		es, err := st.Catalog(context.Background(), slotstore.CatalogParams{})
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := st.History(context.Background(), slotstore.HistoryParams{Job: "hello", Limit: 1000})
		if len(es) == 0 {
			t.Errorf("5 minutes after the loss the catalog is still empty (%d markers written meanwhile)", len(ms))
		}
		a.shutdown(t)
	})
}

// lossyEnroll applies enrolments but, while lose is set, loses their
// replies (a timeout after the store applied the call).
type lossyEnroll struct {
	slotstore.Store
	lose atomic.Bool
}

func (s *lossyEnroll) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	g, err := s.Store.Enroll(ctx, p)
	if s.lose.Load() {
		return nil, fmt.Errorf("%w: reply lost", slotstore.ErrOutcomeUnknown)
	}
	return g, err
}

// A reload whose enrolment was applied but whose reply was lost fails and
// says nothing changed; the catalog, though, has the new spec in force,
// carried by this very replica alone: the old plan, in conflict, finds no
// other live carrier and supersedes it, and the job goes on running.
func TestCatalogFailedReloadKeepsJobRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &lossyEnroll{Store: memstore.New(memstore.Options{})}
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		a := startReplica(t, st, "a", "*/2 * * * * *", 0)
		time.Sleep(5 * time.Second)
		st.lose.Store(true)
		_, err := a.e.Reload(context.Background(), st, []JobSpec{helloSpec(t, a, "*/3 * * * * *")}, 0)
		st.lose.Store(false)
		if err == nil {
			t.Fatal("reload succeeded")
		}
		t.Logf("reload: %v", err)
		n0 := len(a.rec.snapshot())
		time.Sleep(2 * time.Minute)
		ran := len(a.rec.snapshot()) - n0
		if ran == 0 {
			t.Errorf("after a reload that failed and 'changed nothing', the job ran 0 slots in 2 minutes (conflict %v)", a.conflicted())
		}
		a.shutdown(t)
	})
}

// A reload that raises the revision of an unchanged job enrolls it under
// the new revision, which takes force as a restart with the same file
// would put it.
func TestCatalogReloadRaisingRevisionEnrolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		a := startReplica(t, st, "a", "*/2 * * * * *", 1)
		time.Sleep(3 * time.Second)
		b := startReplica(t, st, "b", "*/3 * * * * *", 2)
		time.Sleep(5 * time.Second)
		if a.conflicted() != 1 {
			t.Fatalf("a not in conflict")
		}
		if _, err := a.e.Reload(context.Background(), st, []JobSpec{helloSpec(t, a, "*/2 * * * * *")}, 3); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * catalogEvery)
		es, _ := st.Catalog(context.Background(), slotstore.CatalogParams{})
		if es[0].InForce.Revision != 3 {
			t.Errorf("after a's reload to revision 3: revision %d in force by %s, a in conflict %v",
				es[0].InForce.Revision, es[0].InForce.Replica, a.conflicted())
		}
		b.shutdown(t)
		a.shutdown(t)
	})
}

// dropBeats loses the beats of one replica while drop is set.
type dropBeats struct {
	slotstore.Store
	drop atomic.Bool
	who  string
}

func (s *dropBeats) Beat(ctx context.Context, b slotstore.Beat) error {
	if s.drop.Load() && b.Replica == s.who {
		return fmt.Errorf("%w: beat lost", slotstore.ErrOutcomeUnknown)
	}
	return s.Store.Beat(ctx, b)
}

// The replica of the spec in force (revision 2) misses its beats for 20 s
// while it goes on claiming: the replica of revision 1, in conflict, finds
// no live carrier but does not supersede a higher revision, which stays
// in force.
func TestCatalogBeatHiccupKeepsHigherRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &dropBeats{Store: memstore.New(memstore.Options{}), who: "b"}
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		a := startReplica(t, st, "a", "*/2 * * * * *", 1)
		time.Sleep(3 * time.Second)
		b := startReplica(t, st, "b", "*/3 * * * * *", 2)
		time.Sleep(8 * time.Second)
		st.drop.Store(true)
		time.Sleep(25 * time.Second)
		st.drop.Store(false)
		time.Sleep(2 * time.Minute)
		es, _ := st.Catalog(context.Background(), slotstore.CatalogParams{})
		if es[0].InForce.Revision != 2 {
			t.Errorf("2 minutes after b's beats came back: revision %d in force by %s; a conflict %v, b conflict %v",
				es[0].InForce.Revision, es[0].InForce.Replica, a.conflicted(), b.conflicted())
		}
		b.shutdown(t)
		a.shutdown(t)
	})
}

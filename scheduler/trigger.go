package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// ErrBusy is returned by Trigger for a job with overlap: forbid while one of
// its slots is running somewhere.
var ErrBusy = errors.New("scheduler: busy")

// ErrPaused is returned by Trigger for a job that is paused, or while the
// whole cluster is.
var ErrPaused = errors.New("scheduler: paused")

// TriggerResult says what a manual trigger did.
type TriggerResult struct {
	Job   string
	Slot  time.Time // the manual slot: its run key is Job@Slot
	Fence int64
	End   string // succeeded, failed, timeout, lease_lost, ...
}

// Trigger runs job now, on this replica, as a manual slot: a slot of its own
// (the current second, or the first one after it that is not one of the
// job's scheduled slots), claimed like any other so that it runs once and obeys the job's
// overlap policy, and recorded in history as manual. It returns when the
// run has ended. A forbid job that is running answers ErrBusy.
func (s *Scheduler) Trigger(ctx context.Context, job string) (TriggerResult, error) {
	p := s.plan(job)
	if p == nil {
		return TriggerResult{}, fmt.Errorf("%w: %q", errNoJob, job)
	}
	if s.store == nil {
		st, err := openStore(ctx, s.cfg.Store)
		if err != nil {
			return TriggerResult{}, err
		}
		s.store, s.ownsStore = st, true
	}
	if s.ownsStore {
		defer s.store.Close()
	}
	out, c, sent, err := s.claimManual(ctx, p)
	if err != nil {
		return out, err
	}
	// An interrupted trigger hands its slot back, as a shutdown does.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(errShutdown) })
	defer stop()
	out.End = string(s.execute(rctx, cancel, p, c, sent, runHooks{}))
	return out, nil
}

// errNoJob reports a trigger of a job the configuration does not have.
var errNoJob = errors.New("no such job")

func (s *Scheduler) plan(job string) *plan { return s.byName[job] }

// claimManual claims a manual slot of p; it returns the claim to run, or
// ErrBusy, or why the slot could not be won.
func (s *Scheduler) claimManual(ctx context.Context, p *plan) (TriggerResult, slotstore.Claim, time.Time, error) {
	job := p.name
	ps, err := s.store.Pauses(ctx)
	if err != nil {
		return TriggerResult{Job: job}, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger %s: read pauses: %w", job, err)
	}
	if ps.All || slices.Contains(ps.Jobs, job) {
		return TriggerResult{Job: job}, slotstore.Claim{}, time.Time{}, fmt.Errorf("%w: resume %s first", ErrPaused, job)
	}
	// The current second, or the next free one: not a scheduled slot of the
	// job, and not one another trigger took a moment ago.
	free := func(t time.Time) time.Time {
		for i := 0; i < 60 && p.sched.Prev(t).Equal(t); i++ {
			t = t.Add(time.Second)
		}
		return t
	}
	// A slot from before the job's generation would be skipped (the store
	// cannot tell whether it ran before it lost its data): start after it.
	gens, err := s.store.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{job}})
	if err != nil {
		return TriggerResult{Job: job}, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger %s: enroll: %w", job, err)
	}
	first := s.now().Truncate(time.Second)
	if len(gens) == 1 && slotstore.BeforeGeneration(first, gens[0].Born) {
		first = gens[0].Born.Truncate(time.Second).Add(time.Second)
	}
	slot := free(first)
	out := TriggerResult{Job: job}
	for tries := 0; ; tries++ {
		out.Slot = slot
		if p.sched.Prev(slot).Equal(slot) {
			return out, slotstore.Claim{}, time.Time{}, fmt.Errorf("trigger: %s is scheduled every second of the next minute; no slot is free for a manual run", job)
		}
		sent := time.Now()
		res, err := s.store.Claim(ctx, slotstore.ClaimParams{Replica: s.replica, Incarnation: s.incarnation, Requests: []slotstore.ClaimRequest{{
			Job: p.name, Slot: slot, Lease: p.lease, OnCrash: p.onCrash, MaxAttempts: p.maxAtt, Retain: p.history,
			Overlap: slotstore.Overlap(p.overlap), Manual: true,
		}}})
		if err != nil {
			return out, slotstore.Claim{}, sent, fmt.Errorf("trigger %s: claim: %w", job, err)
		}
		r := res[0]
		switch {
		case r.Status == slotstore.Won:
			for _, ref := range r.Replaced {
				s.log.Info("run replaced", "job", ref.Job, "slot", ref.Slot.UTC().Format(time.RFC3339), "fence", ref.Fence, "by", "manual trigger")
			}
			out.Fence = r.Claim.Fence
			return out, r.Claim, sent, nil
		case r.Status == slotstore.Skipped && r.Marker.Reason == slotstore.ReasonOverlap && r.Marker.Holder == s.replica &&
			r.Marker.Manual:
			return out, slotstore.Claim{}, sent, fmt.Errorf("%w: %s is running and its overlap is forbid", ErrBusy, job)
		case tries < 5:
			slot = free(slot.Add(time.Second)) // taken by another trigger this second
		default:
			return out, slotstore.Claim{}, sent, fmt.Errorf("trigger %s: slot %s is %s", job, slot.Format(time.RFC3339), r.Status)
		}
	}
}

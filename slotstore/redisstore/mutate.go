package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Renew, Finish and Release are one script call each: the script reads the
// marker's state and fence and changes it only while it is running under the
// presented fence (compare-and-set, compare-and-pexpire), so a stale holder
// changes nothing and learns ErrLeaseLost. Finish of a slot already done or
// retrying under the presented fence succeeds and changes nothing, so it may
// be retried after an unknown outcome; Renew of such a slot answers
// ErrFinished. With Options.WaitReplicas, Renew and Finish wait for the
// replicas in the same round trip.

// Renew implements slotstore.Store. The new lease ends Lease after Redis's
// clock at the moment the script runs.
func (s *Store) Renew(ctx context.Context, p slotstore.RenewParams) error {
	if err := rules.ValidateRenew(p); err != nil {
		return err
	}
	return s.mutate(ctx, "renew", p.Ref, renewScript, true, millisUp(p.Lease))
}

// Finish implements slotstore.Store.
func (s *Store) Finish(ctx context.Context, p slotstore.FinishParams) error {
	if err := rules.ValidateFinish(p); err != nil {
		return err
	}
	retryAt := ""
	if !p.RetryAt.IsZero() {
		retryAt = strconv.FormatInt(p.RetryAt.UnixMilli(), 10)
	}
	return s.mutate(ctx, "finish", p.Ref, finishScript, true, string(p.Outcome), p.Error, int64(p.Duration), retryAt,
		flag(s.wait > 0))
}

// Release implements slotstore.Store. It does not wait for replicas: a
// release a failover loses only makes the slot wait for its lease to end.
func (s *Store) Release(ctx context.Context, ref slotstore.Ref) error {
	if err := rules.ValidateRef(ref); err != nil {
		return err
	}
	return s.mutate(ctx, "release", ref, releaseScript, false)
}

// mutate runs sc on the marker of ref with the arguments fence, args...,
// slot, waiting for replicas if waited, and maps its reply: 1 done, 0 lease
// lost, 2 finished under this fence.
func (s *Store) mutate(ctx context.Context, op string, ref slotstore.Ref, sc *script, waited bool, args ...any) error {
	slot := ref.Slot.Unix()
	op = fmt.Sprintf("%s %s@%s fence %d", op, ref.Job, ref.Slot.UTC().Format("2006-01-02T15:04:05Z"), ref.Fence)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	k := keysOf(s.prefix, ref.Job)
	all := append(append([]any{strconv.FormatInt(ref.Fence, 10)}, args...), slot, s.liveKey())
	c := call{script: sc, keys: []string{k.markerKey(slot), k.expiry, k.running}, args: all}
	var (
		cmds    []onceCmd
		waitErr error
	)
	if waited {
		cmds, waitErr = s.runWaited(ctx, []call{c})
	} else {
		cmds = s.runAll(ctx, []call{c})
	}
	res, err := cmds[0].Result()
	if err != nil {
		return s.fail(op, err)
	}
	switch res {
	case int64(1):
		if waitErr != nil {
			return rules.OutcomeUnknown("redisstore "+op, waitErr)
		}
		return nil
	case int64(0):
		return lost(op)
	case int64(2):
		return fmt.Errorf("redisstore: %s: %w", op, slotstore.ErrFinished)
	}
	return rules.OutcomeUnknown("redisstore "+op, fmt.Errorf("unexpected script reply %v", res))
}

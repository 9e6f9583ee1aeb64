package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) slotstore.Store {
		s := memstore.New(memstore.Options{})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestErrors: errors say what was being done, as the other stores' do, and
// wrap the contract's sentinels.
func TestErrors(t *testing.T) {
	slot := time.Date(2100, 11, 29, 2, 0, 0, 0, time.UTC)
	now := slot.Add(-time.Minute) // the generation begins with the claim, and covers the slot
	s := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := t.Context()
	res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "r1",
		Requests: []slotstore.ClaimRequest{{Job: "j", Slot: slot, Lease: time.Minute}}})
	if err != nil || res[0].Status != slotstore.Won {
		t.Fatalf("claim: %v %+v", err, res)
	}
	stale := res[0].Claim.Ref
	stale.Fence++
	check := func(what string, err, want error, text string) {
		t.Helper()
		if !errors.Is(err, want) || err.Error() != text {
			t.Errorf("%s: %q, want %q wrapping %v", what, err, text, want)
		}
	}
	check("renew of another fence", s.Renew(ctx, slotstore.RenewParams{Ref: stale, Lease: time.Minute}), slotstore.ErrLeaseLost,
		"memstore: renew j@2100-11-29T02:00:00Z fence 2: slotstore: lease lost")
	if err := s.Finish(ctx, slotstore.FinishParams{Ref: res[0].Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatal(err)
	}
	check("renew after finish", s.Renew(ctx, slotstore.RenewParams{Ref: res[0].Claim.Ref, Lease: time.Minute}), slotstore.ErrFinished,
		"memstore: renew j@2100-11-29T02:00:00Z fence 1: slotstore: slot finished under this claim")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Claim(cancelled, slotstore.ClaimParams{Replica: "r1",
		Requests: []slotstore.ClaimRequest{{Job: "j", Slot: slot.Add(time.Minute), Lease: time.Minute}}})
	check("claim with a done context", err, context.Canceled, "memstore: claim: context canceled")

	s.Close()
	_, err = s.Claim(ctx, slotstore.ClaimParams{Replica: "r1",
		Requests: []slotstore.ClaimRequest{{Job: "j", Slot: slot.Add(time.Minute), Lease: time.Minute}}})
	check("claim after close", err, slotstore.ErrClosed, "memstore: claim: slotstore: store closed")
	_, err = s.Skip(ctx, slotstore.SkipParams{})
	check("skip after close", err, slotstore.ErrClosed, "memstore: skip: slotstore: store closed")
	_, err = s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"j"}})
	check("enroll after close", err, slotstore.ErrClosed, "memstore: enroll: slotstore: store closed")
	check("set pause after close", s.SetPause(ctx, slotstore.PauseParams{Job: "j", Paused: true}), slotstore.ErrClosed,
		`memstore: set pause of "j": slotstore: store closed`)
	_, err = s.Pauses(ctx)
	check("pauses after close", err, slotstore.ErrClosed, "memstore: pauses: slotstore: store closed")
	_, err = s.History(ctx, slotstore.HistoryParams{Job: "j"})
	check("history after close", err, slotstore.ErrClosed, "memstore: history: slotstore: store closed")
	_, err = s.Prune(ctx)
	check("prune after close", err, slotstore.ErrClosed, "memstore: prune: slotstore: store closed")
	check("release after close", s.Release(ctx, res[0].Claim.Ref), slotstore.ErrClosed,
		"memstore: release j@2100-11-29T02:00:00Z fence 1: slotstore: store closed")
}

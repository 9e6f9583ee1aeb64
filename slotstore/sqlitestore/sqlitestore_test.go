package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) slotstore.Store {
		return open(t, filepath.Join(t.TempDir(), "slots.db"))
	})
}

// open opens the store at path and closes it when t ends.
func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	return openWith(t, sqlitestore.Options{Path: path})
}

// openWith opens the store o describes and closes it when t ends.
func openWith(t *testing.T, o sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("open %s: %v", filepath.Base(o.Path), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func claim(t *testing.T, s slotstore.Store, replica string, r slotstore.ClaimRequest) slotstore.ClaimResult {
	t.Helper()
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: []slotstore.ClaimRequest{r}})
	if err != nil {
		t.Fatalf("claim %s@%v: %v", r.Job, r.Slot, err)
	}
	return res[0]
}

var slot = time.Date(2100, 11, 29, 2, 0, 0, 0, time.UTC)

// TestReopen: markers and fences outlive the Store that wrote them.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.db")
	s := open(t, path)
	first := claim(t, s, "r1", slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	if res := claim(t, s, "r2", slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute}); res.Status != slotstore.Held {
		t.Errorf("claim of a held slot after reopening: %v", res.Status)
	}
	next := claim(t, s, "r2", slotstore.ClaimRequest{Job: "j", Slot: slot.Add(time.Minute), Lease: time.Minute})
	if next.Status != slotstore.Won || next.Claim.Fence <= first.Claim.Fence {
		t.Errorf("claim after reopening: %v fence %d, want won with a fence above %d", next.Status, next.Claim.Fence, first.Claim.Fence)
	}
}

// TestNewerSchema: a file written by a newer build is refused, not
// misread.
func TestNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.db")
	open(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Path: path}); err == nil {
		s.Close()
		t.Fatal("opened a file with schema version 99")
	}
}

func TestOpenRejectsPath(t *testing.T) {
	for _, path := range []string{":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Path: path}); !errors.Is(err, slotstore.ErrInvalid) {
			if s != nil {
				s.Close()
			}
			t.Errorf("open %q: %v, want ErrInvalid", path, err)
		}
	}
}

// TestBusy: a write that cannot get the lock in time fails with ErrBusy,
// changes nothing, and may be retried.
func TestBusy(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "slots.db")
	s := openWith(t, sqlitestore.Options{Path: path, BusyTimeout: 50 * time.Millisecond})
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute}
	_, err = s.Claim(ctx, slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{r}})
	if !errors.Is(err, sqlitestore.ErrBusy) || errors.Is(err, slotstore.ErrOutcomeUnknown) {
		t.Errorf("claim while another connection writes: %v, want ErrBusy", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if res := claim(t, s, "r1", r); res.Status != slotstore.Won || res.Claim.Attempt != 1 {
		t.Errorf("claim after the lock was released: %+v", res)
	}
}

// TestClock: an injected clock decides lease expiry.
func TestClock(t *testing.T) {
	var now atomic.Int64
	now.Store(slot.UnixMilli())
	clock := func() time.Time { return time.UnixMilli(now.Load()) }
	s := openWith(t, sqlitestore.Options{Path: filepath.Join(t.TempDir(), "slots.db"), Clock: clock})
	// The job's generation begins a minute before the slot, and covers it.
	now.Store(slot.Add(-time.Minute).UnixMilli())
	enroll(t, s, "j")
	now.Store(slot.UnixMilli())

	r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute}
	first := claim(t, s, "r1", r)
	if !first.Marker.ClaimedAt.Equal(slot) || !first.Marker.LeaseEnd.Equal(slot.Add(time.Minute)) {
		t.Errorf("claimed at %v until %v, want the injected clock's %v", first.Marker.ClaimedAt, first.Marker.LeaseEnd, slot)
	}
	now.Add((59 * time.Second).Milliseconds())
	if res := claim(t, s, "r2", r); res.Status != slotstore.Held || res.Remaining != time.Second {
		t.Errorf("claim a second before expiry: %v, remaining %v", res.Status, res.Remaining)
	}
	now.Add(time.Second.Milliseconds())
	if res := claim(t, s, "r2", r); res.Status != slotstore.Won || res.Claim.Attempt != 2 {
		t.Errorf("claim at expiry: %v, attempt %d", res.Status, res.Claim.Attempt)
	}
}

// TestCancelledBeforeWrite: a context that ended before a write began is a
// plain failure, not an unknown outcome.
func TestCancelledBeforeWrite(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "slots.db"))
	r := slotstore.ClaimRequest{Job: "j", Slot: slot, Lease: time.Minute}
	ref := claim(t, s, "r1", r).Claim.Ref
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, claimErr := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{r}})
	for op, err := range map[string]error{
		"claim":   claimErr,
		"renew":   s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Minute}),
		"finish":  s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}),
		"release": s.Release(ctx, ref),
	} {
		if !errors.Is(err, context.Canceled) || errors.Is(err, slotstore.ErrOutcomeUnknown) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", op, err)
		}
	}
	if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: ref, Lease: time.Minute}); err != nil {
		t.Errorf("renew after the cancelled calls: %v", err)
	}
}

package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

// TestCancelledBeforeSend: a context that ended before a request left is a
// plain failure, not an unknown outcome.
func TestCancelledBeforeSend(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute}
	ref := claimOne(t, s, "r1", r).Claim.Ref
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, claimErr := s.Claim(ctx, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{r}})
	_, pruneErr := s.Prune(ctx)
	for op, err := range map[string]error{
		"claim":   claimErr,
		"renew":   s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Minute}),
		"finish":  s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}),
		"release": s.Release(ctx, ref),
		"prune":   pruneErr,
	} {
		if !errors.Is(err, context.Canceled) || errors.Is(err, slotstore.ErrOutcomeUnknown) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", op, err)
		}
	}
	if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: ref, Lease: time.Minute}); err != nil {
		t.Errorf("renew after the cancelled calls: %v", err)
	}
}

// lockRow holds a row lock of the store's schema in an open transaction
// until t ends or the returned func is called.
func lockRow(t *testing.T, s *pgstore.Store, table, where string) func() {
	t.Helper()
	pool := newPool(t, testserver.SharedPostgres(t).DSN())
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sql := "SELECT 1 FROM " + pgx.Identifier{s.Schema(), table}.Sanitize() + " WHERE " + where + " FOR UPDATE"
	if _, err := tx.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
	done := func() { tx.Rollback(context.Background()) }
	t.Cleanup(done)
	return done
}

// TestTimeoutAfterSend: a context that ends while a request waits in the
// server leaves its outcome unknown; the store works afterwards. A claim
// with a deadline stops waiting for a lock in the server before it (its
// lock_timeout): a definite failure.
func TestTimeoutAfterSend(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute}
	ref := claimOne(t, s, "r1", r).Claim.Ref
	unlockFence := lockRow(t, s, "fences", "job = 'j'")
	unlockMarker := lockRow(t, s, "markers", "job = 'j'")

	short := func() context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	next := r
	next.Slot = slot(1)
	_, claimErr := s.Claim(short(), slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{next}})
	var pgErr *pgconn.PgError
	if !errors.As(claimErr, &pgErr) || (pgErr.Code != "55P03" && pgErr.Code != "57014") || errors.Is(claimErr, slotstore.ErrOutcomeUnknown) ||
		!errors.Is(claimErr, context.DeadlineExceeded) {
		t.Errorf("claim with a deadline waiting in the server: %v, want a definite lock or statement timeout (55P03, 57014) that is a deadline", claimErr)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	_, claimErr = s.Claim(cancelled, slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{next}})
	if !errors.Is(claimErr, slotstore.ErrOutcomeUnknown) || !errors.Is(claimErr, context.Canceled) {
		t.Errorf("claim without a deadline cancelled in the server: %v, want an unknown outcome wrapping Canceled", claimErr)
	}
	for op, call := range map[string]func() error{
		"renew":  func() error { return s.Renew(short(), slotstore.RenewParams{Ref: ref, Lease: time.Minute}) },
		"finish": func() error { return s.Finish(short(), slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}) },
	} {
		// A connection ready in the pool, so the short deadline is spent
		// waiting in the server and not dialling (the calls before closed
		// theirs).
		if _, err := s.Pauses(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := call(); !errors.Is(err, slotstore.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s timing out in the server: %v, want an unknown outcome wrapping DeadlineExceeded", op, err)
		}
	}
	unlockFence()
	unlockMarker()
	// The finish that timed out may have been recorded after all.
	if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: ref, Lease: time.Minute}); err != nil && !errors.Is(err, slotstore.ErrFinished) {
		t.Errorf("renew after the timeouts: %v", err)
	}
	if _, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r3", Requests: []slotstore.ClaimRequest{next}}); err != nil {
		t.Errorf("claim after the timeouts: %v", err)
	}
}

// TestStatementTimeout: a statement the server cancels for running past
// the statement timeout rolled back: a plain error, not an unknown outcome.
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	s := newStore(t, func(o *pgstore.Options) { o.StatementTimeout = 100 * time.Millisecond })
	r := slotstore.ClaimRequest{Job: "j", Slot: slot(0), Lease: time.Minute}
	ref := claimOne(t, s, "r1", r).Claim.Ref
	unlock := lockRow(t, s, "fences", "job = 'j'")
	next := r
	next.Slot = slot(1)
	_, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r2", Requests: []slotstore.ClaimRequest{next}})
	if err == nil || errors.Is(err, slotstore.ErrOutcomeUnknown) {
		t.Errorf("claim past the statement timeout: %v, want a plain error", err)
	}
	unlock()
	if _, ok := find(t, s, "j", next.Slot); ok {
		t.Error("the cancelled claim left a marker")
	}
	if err := s.Renew(t.Context(), slotstore.RenewParams{Ref: ref, Lease: time.Minute}); err != nil {
		t.Errorf("renew: %v", err)
	}
}

package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// ErrConflict reports a call whose transaction kept failing its compares,
// because other writers kept changing the keys it decided on, for every
// one of its attempts. Nothing of the attempts that failed was written.
var ErrConflict = errors.New("etcdstore: too much contention: the keys kept changing")

// ErrTooLarge reports a request that needs more operations or bytes in one
// transaction than Options.MaxTxnOps or the store's request budget allow:
// a replace claim that would supersede too many running slots. Nothing was
// written.
var ErrTooLarge = errors.New("etcdstore: request too large for one etcd transaction")

// fail turns err, the failure of a request that may have written (a
// transaction with writes), into the error callers test for: ErrClosed
// after Close; the plain error when etcd surely did not apply it;
// otherwise an error wrapping slotstore.ErrOutcomeUnknown.
func (s *Store) fail(op string, err error) error {
	switch {
	case notApplied(err) && s.closed.Load():
		return fmt.Errorf("etcdstore: %s: %w: %w", op, slotstore.ErrClosed, err)
	case notApplied(err):
		return fmt.Errorf("etcdstore: %s: %w", op, err)
	case s.closed.Load():
		// Closed while the request was out: it may have been applied.
		return rules.OutcomeUnknown("etcdstore "+op, fmt.Errorf("%w: %w", slotstore.ErrClosed, err))
	}
	return rules.OutcomeUnknown("etcdstore "+op, err)
}

// failRead is fail for a request that writes nothing: no error of it is an
// unknown outcome.
func (s *Store) failRead(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("etcdstore: %s: %w: %w", op, slotstore.ErrClosed, err)
	}
	return fmt.Errorf("etcdstore: %s: %w", op, err)
}

// notApplied reports whether err proves that etcd did not apply the
// request: it refused it before proposing it (a bad or too large request,
// a lease it does not have, a permission, no leader to propose to), or the
// client never sent it. Everything else (a timeout, a connection lost
// after sending, a leader that failed while the proposal was in flight)
// leaves the outcome unknown.
func notApplied(err error) bool {
	if errors.Is(err, errUnsent) || errors.Is(err, rpctypes.ErrNoLeader) {
		return true
	}
	var ee rpctypes.EtcdError
	if !errors.As(err, &ee) {
		return false
	}
	switch ee.Code() {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.PermissionDenied,
		codes.Unauthenticated, codes.ResourceExhausted, codes.OutOfRange:
		return true
	}
	return false
}

// transient reports whether err, of a request etcd did not apply, may go
// away if the request is sent again shortly: no leader yet, too many
// requests at once.
func transient(err error) bool {
	return errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrTooManyRequests)
}

// unanswered reports whether err is the failure of one request of a call
// whose context still runs: the request's own timeout, or its connection
// lost. Sent again, it most likely goes to another member.
func (s *Store) unanswered(ctx context.Context, err error) bool {
	if ctx.Err() != nil || s.closed.Load() {
		return false
	}
	return unansweredRequest(err)
}

// unansweredRequest reports whether err is one request's timeout, or its
// connection lost, or a member that could not be reached.
func unansweredRequest(err error) bool {
	if notApplied(err) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Unavailable, codes.Canceled:
		return true
	}
	return false
}

// errUnsent marks the error of a request the store never sent.
var errUnsent = errors.New("not sent")

// unsent is the error of a request not sent because its context ended
// with err.
func unsent(err error) error { return fmt.Errorf("%w: %w", errUnsent, err) }

// lost is the error of a fenced mutation whose fence is not the slot's
// running claim.
func lost(op string) error {
	return fmt.Errorf("etcdstore: %s: %w", op, slotstore.ErrLeaseLost)
}

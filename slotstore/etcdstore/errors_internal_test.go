package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/slotcron/slotcron/slotstore"
)

// A write etcd refused before proposing it, or that was never sent, fails
// plainly; any other failure of a write leaves its outcome unknown.
func TestFailOfAWrite(t *testing.T) {
	s := &Store{}
	for _, tc := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"request timed out", rpctypes.ErrTimeout, true},
		{"leader failed", rpctypes.ErrTimeoutDueToLeaderFail, true},
		{"connection lost", rpctypes.ErrTimeoutDueToConnectionLost, true},
		{"context deadline", context.DeadlineExceeded, true},
		{"transport closing", status.Error(codes.Unavailable, "transport is closing"), true},
		{"server stopped", rpctypes.ErrStopped, true},
		{"no leader", rpctypes.ErrNoLeader, false},
		{"too many operations", rpctypes.ErrTooManyOps, false},
		{"request too large", rpctypes.ErrRequestTooLarge, false},
		{"lease not found", rpctypes.ErrLeaseNotFound, false},
		{"permission denied", rpctypes.ErrPermissionDenied, false},
		{"database full", rpctypes.ErrNoSpace, false},
		{"not sent", fmt.Errorf("%w: %w", errUnsent, context.Canceled), false},
	} {
		got := s.fail("claim", tc.err)
		if errors.Is(got, slotstore.ErrOutcomeUnknown) != tc.unknown || !errors.Is(got, tc.err) {
			t.Errorf("%s: %v, want unknown %v, wrapping the cause", tc.name, got, tc.unknown)
		}
	}
	s.closed.Store(true)
	if err := s.fail("claim", rpctypes.ErrTimeout); !errors.Is(err, slotstore.ErrClosed) {
		t.Errorf("after close: %v, want ErrClosed", err)
	}
}

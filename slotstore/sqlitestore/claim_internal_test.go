package sqlitestore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestCommitCancelled: a claim whose context ends while it commits reports
// an unknown outcome, and the store stays usable.
func TestCommitCancelled(t *testing.T) {
	s, err := Open(t.Context(), Options{Path: filepath.Join(t.TempDir(), "slots.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{
		{Job: "j", Slot: time.Date(2100, 11, 29, 2, 0, 0, 0, time.UTC), Lease: time.Minute},
	}}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s.beforeCommit = cancel
	_, err = s.Claim(ctx, p)
	if !errors.Is(err, slotstore.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("claim cancelled during its commit: %v, want an unknown outcome", err)
	}

	s.beforeCommit = nil
	if res, err := s.Claim(t.Context(), p); err != nil || len(res) != 1 {
		t.Errorf("claim after a cancelled commit: %v, %v", res, err)
	}
}

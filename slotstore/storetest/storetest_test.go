package storetest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

// brokenEnv names the store the child run of this test binary is given.
const brokenEnv = "SLOTCRON_STORETEST_BROKEN"

// unfenced is a store that forgets to check fences on renewal: the bug the
// field knows best. The suite must not pass it.
type unfenced struct{ *memstore.Store }

func (u unfenced) Renew(ctx context.Context, p slotstore.RenewParams) error {
	hist, err := u.History(ctx, slotstore.HistoryParams{Job: p.Job, Limit: 1000})
	if err != nil {
		return err
	}
	for _, m := range hist {
		if m.Slot.Equal(p.Slot.UTC()) {
			p.Fence = m.Fence // renew whatever claim holds the slot
		}
	}
	return u.Store.Renew(ctx, p)
}

// TestSuiteRejectsUnfencedStore runs the suite against the broken store in a
// child process and expects it to fail, naming the stale-fence checks.
func TestSuiteRejectsUnfencedStore(t *testing.T) {
	if os.Getenv(brokenEnv) == "1" {
		storetest.Run(t, func(*testing.T) slotstore.Store { return unfenced{memstore.New(memstore.Options{})} })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteRejectsUnfencedStore$")
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a store that ignores fences on renewal:\n%s", out)
	}
	if !strings.Contains(string(out), "StaleFence") {
		t.Errorf("the suite failed, but not in StaleFence:\n%s", out)
	}
}

// The reference backend passes.
func TestSuitePassesMemstore(t *testing.T) {
	storetest.Run(t, func(*testing.T) slotstore.Store { return memstore.New(memstore.Options{}) })
}

package leadertest_test

import (
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/internal/fakedriver"
	"github.com/slotcron/slotcron/leader/leadertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The suite against the in-memory driver: it checks the suite itself and
// the elector's logic apart from any store.
func TestRun(t *testing.T) {
	st := fakedriver.New()
	leadertest.Run(t, leadertest.Harness{
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			return leader.NewElector(st.Driver(), leader.Options{Logger: log})
		},
		NewStallable: func(t *testing.T, log *slog.Logger) (leader.Elector, func()) {
			d := st.Driver()
			return leader.NewElector(d, leader.Options{Logger: log}), d.Stall
		},
	})
}

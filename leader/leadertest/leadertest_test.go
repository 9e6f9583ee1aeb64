package leadertest_test

import (
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
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
			return driver.NewElector(st.Driver(), driver.Options{Logger: log})
		},
		NewStallable: func(t *testing.T, log *slog.Logger) (leader.Elector, func()) {
			d := st.Driver()
			return driver.NewElector(d, driver.Options{Logger: log}), d.Stall
		},
	})
}

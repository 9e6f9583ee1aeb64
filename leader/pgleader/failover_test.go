package pgleader_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/leadertest"
)

const (
	dsnEnv    = "SLOTCRON_PGLEADER_TEST_DSN"
	schemaEnv = "SLOTCRON_PGLEADER_TEST_SCHEMA"
)

// TestFailoverTiming kills a leader process 20 times and reports how soon a
// follower takes over (go test -run TestFailoverTiming -v).
func TestFailoverTiming(t *testing.T) {
	leadertest.Failover(t, leadertest.FailoverConfig{
		Start: func(t *testing.T) []string {
			return []string{dsnEnv + "=" + testserver.SharedPostgres(t).DSN(), schemaEnv + "=" + freshSchema()}
		},
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			return elector(t, os.Getenv(dsnEnv), os.Getenv(schemaEnv), log)
		},
	})
}

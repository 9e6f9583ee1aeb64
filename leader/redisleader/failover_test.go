package redisleader_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/leadertest"
	"github.com/slotcron/slotcron/leader/redisleader"
)

const addrEnv = "SLOTCRON_REDISLEADER_TEST_ADDR"

// TestFailoverTiming kills a leader process 20 times and reports how soon a
// follower takes over (go test -run TestFailoverTiming -v).
func TestFailoverTiming(t *testing.T) {
	leadertest.Failover(t, leadertest.FailoverConfig{
		Start: func(t *testing.T) []string {
			return []string{addrEnv + "=" + testserver.StartRedis(t).Addr()}
		},
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			return redisleader.New(client(t, os.Getenv(addrEnv)), redisleader.Options{Logger: log})
		},
	})
}

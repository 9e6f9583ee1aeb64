package etcdleader_test

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
	"github.com/slotcron/slotcron/leader/leadertest"
)

const (
	endpointsEnv = "SLOTCRON_ETCDLEADER_TEST_ENDPOINTS"
	prefixEnv    = "SLOTCRON_ETCDLEADER_TEST_PREFIX"
)

// TestFailoverTiming kills a leader process 20 times and reports how soon a
// follower takes over (go test -run TestFailoverTiming -v).
func TestFailoverTiming(t *testing.T) {
	leadertest.Failover(t, leadertest.FailoverConfig{
		Start: func(t *testing.T) []string {
			return []string{endpointsEnv + "=" + strings.Join(cluster(t).Endpoints(), ","), prefixEnv + "=" + newPrefix()}
		},
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			c := newClient(t, strings.Split(os.Getenv(endpointsEnv), ",")...)
			return elector(t, c, etcdleader.Options{Prefix: os.Getenv(prefixEnv), Logger: log})
		},
	})
}

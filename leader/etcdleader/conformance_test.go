package etcdleader_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
	"github.com/slotcron/slotcron/leader/leadertest"
)

func TestConformance(t *testing.T) {
	c := cluster(t)
	prefix := newPrefix()
	leadertest.Run(t, leadertest.Harness{
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			return elector(t, newClient(t, c.Endpoints()...), etcdleader.Options{Prefix: prefix, Logger: log})
		},
		// A client whose only endpoint is a proxy to one member: blackholed,
		// every request it sends goes unanswered.
		NewStallable: func(t *testing.T, log *slog.Logger) (leader.Elector, func()) {
			p := testserver.StartProxy(t, strings.TrimPrefix(c.Members()[0].ClientURL(), "http://"))
			return elector(t, newClient(t, p.Addr()), etcdleader.Options{Prefix: prefix, Logger: log}), p.Blackhole
		},
	})
}

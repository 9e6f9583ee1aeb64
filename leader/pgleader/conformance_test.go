package pgleader_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/leadertest"
)

func TestConformance(t *testing.T) {
	pg := testserver.SharedPostgres(t)
	schema := freshSchema()
	leadertest.Run(t, leadertest.Harness{
		New: func(t *testing.T, log *slog.Logger) leader.Elector {
			return elector(t, pg.DSN(), schema, log)
		},
		NewStallable: func(t *testing.T, log *slog.Logger) (leader.Elector, func()) {
			p := testserver.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.Port()))
			return elector(t, viaProxy(pg.DSN(), pg.Port(), p.Addr()), schema, log), p.Blackhole
		},
	})
}

package pgleader_test

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/pgleader"
)

// TestMain shares one private cluster among the package's tests, stops it
// after them, and then checks that no goroutine outlived its test.
func TestMain(m *testing.M) { testserver.RunWithSharedPostgres(m) }

var schemas atomic.Int64

// freshSchema returns a schema name no other test uses.
func freshSchema() string { return fmt.Sprintf("l%d_%d", os.Getpid(), schemas.Add(1)) }

// elector returns an elector on dsn in schema.
func elector(t testing.TB, dsn, schema string, log *slog.Logger) leader.Elector {
	t.Helper()
	e, err := pgleader.New(t.Context(), pgleader.Options{DSN: dsn, Schema: schema, Logger: log})
	if err != nil {
		t.Fatalf("pgleader.New: %v", err)
	}
	return e
}

// viaProxy returns dsn with its address replaced by a proxy's.
func viaProxy(dsn string, port int, proxy string) string {
	return strings.Replace(dsn, fmt.Sprintf("127.0.0.1:%d", port), proxy, 1)
}

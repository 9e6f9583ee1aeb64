package backend_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	_ "github.com/slotcron/slotcron/scheduler/etcd"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	_ "github.com/slotcron/slotcron/scheduler/postgres"
	_ "github.com/slotcron/slotcron/scheduler/redis"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each kind opens its backend; an unknown one is an error naming it.
func TestOpen(t *testing.T) {
	ctx := t.Context()
	for _, c := range []backend.Config{
		{Kind: "memory"},
		{Kind: "sqlite", Options: sqlitestore.Options{Path: filepath.Join(t.TempDir(), "a.db")}},
		{Options: &sqlitestore.Options{Path: filepath.Join(t.TempDir(), "b.db")}}, // sqlite is the default
	} {
		st, err := backend.Open(ctx, c)
		if err != nil {
			t.Fatalf("open %+v: %v", c, err)
		}
		st.Close()
	}
	if _, err := backend.Open(ctx, backend.Config{Kind: "mongo"}); err == nil || !strings.Contains(err.Error(), `"mongo"`) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := backend.Open(ctx, backend.Config{Kind: "sqlite", Options: memstore.Options{}}); err == nil ||
		!strings.Contains(err.Error(), "sqlitestore.Options, not memstore.Options") {
		t.Errorf("options of another kind: %v", err)
	}
}

// Duties elect with the elector of the store actually in use, however the
// store was made: a Postgres store handed over without any DSN in the
// configuration still gets Postgres's elector, not the polled fallback.
func TestElectorFollowsTheStore(t *testing.T) {
	ctx := t.Context()
	pg := testserver.StartPostgres(t)
	rd := testserver.StartRedis(t)

	byDSN, err := pgstore.Open(ctx, pgstore.Options{DSN: pg.DSN(), Schema: "by_dsn"})
	if err != nil {
		t.Fatal(err)
	}
	defer byDSN.Close()
	pool, err := pgxpool.New(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	byPool, err := pgstore.New(ctx, pool, pgstore.Options{Schema: "by_pool"})
	if err != nil {
		t.Fatal(err)
	}
	defer byPool.Close()
	// A pool whose settings were changed in code after parsing (its string
	// names a database that does not exist), with a pool setting in its
	// string: the elector must connect as the pool does.
	pc, err := pgxpool.ParseConfig(strings.Replace(pg.DSN(), "/postgres?", "/not_here?pool_max_conns=4&", 1))
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.Database = "postgres"
	edited, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer edited.Close()
	byEdited, err := pgstore.New(ctx, edited, pgstore.Options{Schema: "by_edited"})
	if err != nil {
		t.Fatal(err)
	}
	defer byEdited.Close()
	rs, err := redisstore.Open(ctx, redisstore.Options{Addr: rd.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	etcd := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	es, err := backend.Open(ctx, backend.Config{Kind: "etcd", Options: etcdstore.Options{Endpoints: etcd.Endpoints()}})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()

	for _, tc := range []struct {
		name string
		st   slotstore.Store
		want string
	}{
		{"postgres by DSN", byDSN, "postgres"},
		{"postgres by pool", byPool, "postgres"},
		{"postgres by a pool edited in code", byEdited, "postgres"},
		{"redis", rs, "redis"},
		{"etcd", es, "etcd"},
		{"memory", memstore.New(memstore.Options{}), "slot store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			el, got, err := backend.Elector(ctx, tc.st, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("elector %q, want %q", got, tc.want)
			}
			// It elects: a lone candidate wins a term with a fence.
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var fence int64
			err = el.Lead(lctx, leader.Params{Name: "d", Replica: "a", Lease: time.Second}, func(_ context.Context, term leader.Term) {
				fence = term.Fence
				cancel()
			})
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("Lead: %v", err)
			}
			if fence <= 0 {
				t.Errorf("no term won (fence %d)", fence)
			}
		})
	}
}

// What go-redis logs on its own goes through the replica's slog logger.
func TestRedisClientLogsGoThroughSlog(t *testing.T) {
	rd := testserver.StartRedis(t)
	st, err := redisstore.Open(t.Context(), redisstore.Options{Addr: rd.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf testlog.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	backend.RouteClientLogs(st, log)
	defer backend.RouteClientLogs(st, slog.New(slog.DiscardHandler))
	// A Sentinel that is no Sentinel: go-redis logs its failed query.
	if s, err := redisstore.Open(t.Context(), redisstore.Options{Addrs: []string{rd.Addr()}, MasterName: "nomaster"}); err == nil {
		s.Close()
		t.Fatal("a store on a Sentinel that is none opened")
	}
	if got := buf.String(); !strings.Contains(got, `"level":"WARN","msg":"redis client","detail":"sentinel: `) {
		t.Errorf("logged %q, want go-redis's sentinel line through slog", got)
	}
}

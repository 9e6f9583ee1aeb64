package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// onSharedStores runs run on SQLite, Redis, Postgres and etcd, in parallel,
// each with a store of its own (catalogStores); skipped with -short, as it
// starts the servers.
func onSharedStores(t *testing.T, run func(t *testing.T, open func() slotstore.Store)) {
	if testing.Short() {
		t.Skip("starts redis-server, postgres and etcd")
	}
	t.Parallel()
	for kind, open := range catalogStores {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			run(t, open(t))
		})
	}
}

// catalogStores open, for each kind of shared store, a new handle on one
// store per call: each replica of a test its own, as separate processes
// would have.
var catalogStores = map[string]func(t *testing.T) func() slotstore.Store{
	"sqlite": func(t *testing.T) func() slotstore.Store {
		path := filepath.Join(t.TempDir(), "s.db")
		return func() slotstore.Store {
			st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path})
			return closing(t, st, err)
		}
	},
	"redis": func(t *testing.T) func() slotstore.Store {
		srv := testserver.StartRedis(t)
		return func() slotstore.Store {
			st, err := redisstore.Open(context.Background(), redisstore.Options{Addrs: []string{srv.Addr()}})
			return closing(t, st, err)
		}
	},
	"postgres": func(t *testing.T) func() slotstore.Store {
		pg := testserver.StartPostgres(t)
		return func() slotstore.Store {
			st, err := pgstore.Open(context.Background(), pgstore.Options{DSN: pg.DSN()})
			return closing(t, st, err)
		}
	},
	"etcd": func(t *testing.T) func() slotstore.Store {
		cluster := testserver.StartEtcd(t, testserver.EtcdConfig{})
		return func() slotstore.Store {
			st, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: cluster.Endpoints(), Prefix: "cat"})
			return closing(t, st, err)
		}
	},
}

func closing(t *testing.T, st slotstore.Store, err error) slotstore.Store {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestRollingScheduleChange: the deploy that changes hello from every 2 s
// to every 3 s while a replica of the old configuration still runs, on
// every shared store. Once the new replica has enrolled, history holds
// only the new schedule's slots, each once; the old replica says so at
// WARN, with both fingerprints and what differs, and its
// slotcron_job_spec_conflict is 1.
func TestRollingScheduleChange(t *testing.T) {
	onSharedStores(t, rollingScheduleChange)
}

func rollingScheduleChange(t *testing.T, open func() slotstore.Store) {
	rec := &recorder{}
	reg := jobs.NewRegistry()
	reg.Register("hello", rec.fn)
	conf := func(spec string) string {
		return fmt.Sprintf("shutdown_grace: 1s\njobs: {hello: {schedule: %q, lease: 5s, starting_deadline: 2s}}", spec)
	}
	var oldLogs testlog.Buffer
	oldMetrics := prometheus.NewRegistry()
	stopOld := start(t, replica(t, open(), "old", conf("*/2 * * * * *"), reg,
		WithLogger(slog.New(slog.NewJSONHandler(&oldLogs, nil))), WithRegistry(oldMetrics)))
	defer stopOld()
	poll.Until(t, 10*time.Second, "a run of the old schedule", func() error { return runsAtLeast(1, len(rec.snapshot())) })
	newMetrics := prometheus.NewRegistry()
	stopNew := start(t, replica(t, open(), "new", conf("*/3 * * * * *"), reg, WithRegistry(newMetrics)))
	defer stopNew()
	poll.Until(t, 15*time.Second, "the old replica standing aside", func() error {
		if gauge(t, oldMetrics, "slotcron_job_spec_conflict", "job_name", "hello") != 1 {
			return errors.New("slotcron_job_spec_conflict{job_name=hello} is not 1 on the old replica")
		}
		return nil
	})
	time.Sleep(7 * time.Second) // two or three slots of each schedule
	stopNew()
	stopOld()

	st := open()
	// When the new spec took force, by the store's clock: a slot claimed
	// ahead under the old one, up to ClaimLead before it, runs as claimed.
	cat, err := st.Catalog(context.Background(), slotstore.CatalogParams{Jobs: []string{"hello"}})
	if err != nil || len(cat) != 1 || cat[0].InForce.Replica != "new" {
		t.Fatalf("catalog: %+v, %v", cat, err)
	}
	switched := cat[0].InForce.Since.Add(slotstore.ClaimLead)
	ms, err := st.History(context.Background(), slotstore.HistoryParams{Job: "hello", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	after := 0
	for _, m := range ms {
		if !m.Slot.After(switched) {
			continue
		}
		after++
		if m.Slot.Second()%3 != 0 {
			t.Errorf("slot %s (%s by %s) after the new replica enrolled is not of its schedule", m.Slot.Format(time.RFC3339), m.State, m.Holder)
		}
	}
	if after < 2 {
		t.Errorf("%d slots after the switch, want the new schedule's", after)
	}
	seen := map[int64]int{}
	for _, r := range rec.snapshot() {
		if seen[r.run.Slot.Unix()]++; seen[r.run.Slot.Unix()] > 1 && r.run.Attempt == 1 {
			t.Errorf("slot %s ran twice", r.run.Slot.Format(time.RFC3339))
		}
	}
	warns := oldLogs.Logged(t, "job's spec is not the spec in force; not claiming its slots")
	if len(warns) != 1 {
		t.Fatalf("%d conflict lines on the old replica, want 1:\n%s", len(warns), oldLogs.String())
	}
	if d, _ := warns[0]["differs"].(string); !strings.Contains(d, `schedule: "*/2 * * * * *" → "*/3 * * * * *"`) ||
		warns[0]["spec"] == warns[0]["in_force"] || warns[0]["in_force_by"] != "new" {
		t.Errorf("conflict line: %v", warns[0])
	}
	if g := gauge(t, newMetrics, "slotcron_job_spec_conflict", "job_name", "hello"); g != 0 {
		t.Errorf("the new replica's slotcron_job_spec_conflict = %v", g)
	}
}

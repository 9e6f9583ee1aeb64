package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/etcd" // the kinds the harness measures
	_ "github.com/slotcron/slotcron/scheduler/postgres"
	_ "github.com/slotcron/slotcron/scheduler/redis"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// jobName is job i's name in the slotcron configuration.
func jobName(i int) string { return fmt.Sprintf("j%06d", i) }

// jobIndex parses jobName.
func jobIndex(name string) int {
	i, err := strconv.Atoi(name[1:])
	if err != nil {
		return -1
	}
	return i
}

// benchConfig is the configuration every slotcron contestant runs: the
// workload's jobs bound to one no-op function, catch_up none (a replica
// that starts late does not try older slots), logs at the default level
// (info: Log left zero).
func benchConfig(w workload, replica string, store scheduler.StoreConfig) *scheduler.Config {
	cfg := &scheduler.Config{
		Replica:  replica,
		Store:    store,
		Defaults: scheduler.Policy{CatchUp: "none"},
		Jobs:     make(map[string]scheduler.JobConfig, w.jobs),
	}
	for i := range w.jobs {
		cfg.Jobs[jobName(i)] = scheduler.JobConfig{Schedule: w.spec(i), Run: "noop"}
	}
	return cfg
}

// storeKind names a slotcron backend under test.
type storeKind string

const (
	kindMemory   storeKind = "memory"
	kindSQLite   storeKind = "sqlite"
	kindRedis    storeKind = "redis"
	kindPostgres storeKind = "postgres"
	kindEtcd     storeKind = "etcd"
)

// openStore opens one client of a fresh store for one measurement: ns
// names it (a Redis or etcd key prefix, a Postgres schema, an SQLite
// file), so measurements never see each other's markers.
func (e *env) openStore(ctx context.Context, kind storeKind, ns string) (slotstore.Store, scheduler.StoreConfig, error) {
	switch kind {
	case kindMemory:
		return memstore.New(memstore.Options{}), scheduler.StoreConfig{Kind: "memory"}, nil
	case kindSQLite:
		path := filepath.Join(e.dir, ns+".db")
		s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
		return s, scheduler.StoreConfig{Kind: "sqlite", Options: sqlitestore.Options{Path: path}}, err
	case kindRedis:
		addr, err := e.redisAddr()
		if err != nil {
			return nil, scheduler.StoreConfig{}, err
		}
		s, err := redisstore.Open(ctx, redisstore.Options{Addrs: []string{addr}, Prefix: ns + ":"})
		return s, scheduler.StoreConfig{Kind: "redis", Options: redisstore.Options{Addr: addr, Prefix: ns + ":"}}, err
	case kindPostgres:
		dsn, err := e.pgDSN()
		if err != nil {
			return nil, scheduler.StoreConfig{}, err
		}
		s, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, Schema: ns})
		return s, scheduler.StoreConfig{Kind: "postgres", Options: pgstore.Options{DSN: dsn, Schema: ns}}, err
	case kindEtcd:
		eps, err := e.etcdEndpoints()
		if err != nil {
			return nil, scheduler.StoreConfig{}, err
		}
		o := etcdstore.Options{Endpoints: eps, Prefix: ns + "/"}
		s, err := etcdstore.Open(ctx, o)
		if err != nil { // a nil *Store in the interface would not be nil
			return nil, scheduler.StoreConfig{}, err
		}
		return s, scheduler.StoreConfig{Kind: "etcd", Options: o}, nil
	}
	return nil, scheduler.StoreConfig{}, fmt.Errorf("unknown store %q", kind)
}

// startSlotcron runs replicas schedulers in this process, each with its
// own client of one fresh store and its own replica name. memstore is
// in-process, so its replicas share one instance.
func (e *env) startSlotcron(ctx context.Context, kind storeKind, replicas int, w workload, rec *recorder) (func(), error) {
	e.seq++
	ns := fmt.Sprintf("sb%d_%d", time.Now().Unix()%100000, e.seq)
	var stores []slotstore.Store
	closeAll := func() {
		for _, s := range stores {
			s.Close()
		}
		if kind == kindEtcd {
			e.etcdDrop(ns + "/")
		}
	}
	var shared slotstore.Store
	var scheds []*scheduler.Scheduler
	logs := newWarnCounter()
	for r := range replicas {
		st, sc, err := e.openStore(ctx, kind, ns)
		if kind == kindMemory && shared != nil {
			st = shared
		} else if err != nil {
			closeAll()
			return nil, err
		} else {
			stores = append(stores, st)
			shared = st
		}
		reg := jobs.NewRegistry()
		reg.Register("noop", func(_ context.Context, run jobs.Run) error {
			rec.record(jobIndex(run.Job), run.Slot, time.Now())
			return nil
		})
		s, err := scheduler.New(benchConfig(w, fmt.Sprintf("r%d", r+1), sc), reg,
			scheduler.WithStore(st), scheduler.WithLogger(logs.logger()))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("scheduler.New: %w", err)
		}
		scheds = append(scheds, s)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range scheds {
		wg.Go(func() {
			if err := s.Run(runCtx); err != nil {
				fmt.Fprintf(os.Stderr, "slotbench: %s Run: %v\n", s.Replica(), err)
			}
		})
	}
	return func() {
		t0 := time.Now()
		cancel()
		wg.Wait()
		e.lastStop = time.Since(t0)
		closeAll()
		if n := logs.n.Load(); n > 0 {
			fmt.Fprintf(os.Stderr, "slotbench: %d warnings logged (first 5 shown)\n", n)
		}
		e.lastWarnings = logs.n.Load()
	}, nil
}
